#pragma once
// Headless Chromium (Debian's `chromium`, installed by scripts/bootstrap)
// driven through the DevTools protocol over its WebSocket: the dashboard's
// browser tests load the real page from the real server, run its script
// and read the DOM it built. No timing is asserted: wait_for() polls a
// condition until it holds or a generous deadline passes.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <simdjson.h>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ebb/io/json_writer.hpp"
#include "support/ebb_server.hpp"
#include "support/http_client.hpp"

namespace ebb::testing {

inline constexpr const char* kChromium = "/usr/bin/chromium";

class HeadlessBrowser {
 public:
  HeadlessBrowser(int width = 1280, int height = 900) {
    if (access(kChromium, X_OK) != 0) throw std::runtime_error("no /usr/bin/chromium: run scripts/bootstrap (it installs Debian's chromium)");
    profile_ = make_temp_dir("ebb-chromium");
    const std::string log = (profile_ / "chromium.log").string();
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);  // its own group: the renderers and the zygote go with it
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // and it dies with the test, even a crashed one
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<std::string> args = {kChromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                       "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                                       "--disable-background-networking", "--disable-sync", "--mute-audio", "--hide-scrollbars",
                                       // The page's timers must run as in a visible tab.
                                       "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                                       "--disable-backgrounding-occluded-windows",
                                       "--remote-debugging-port=0", "--user-data-dir=" + profile_.string(),
                                       "--window-size=" + std::to_string(width) + "," + std::to_string(height), "about:blank"};
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    setpgid(pid_, pid_);  // (also here: whichever runs first)
    try {
      connect();
    } catch (...) {
      shut_down();
      throw;
    }
  }
  ~HeadlessBrowser() { shut_down(); }
  HeadlessBrowser(const HeadlessBrowser&) = delete;
  HeadlessBrowser& operator=(const HeadlessBrowser&) = delete;

  // Opens `url` and waits for its load event (the page's script has run
  // once; what it fetches comes later: wait_for that).
  void navigate(const std::string& url) {
    // A mark on the page being left: the new one has not got it, so the
    // wait below cannot be satisfied by the old document.
    evaluate("window.__ebbLeaving = true");
    call("Page.navigate", "{\"url\":" + json_quote(url) + "}");
    if (!wait_for("document.readyState === 'complete' && !window.__ebbLeaving && location.href !== 'about:blank'")) {
      throw std::runtime_error("the page did not load: " + url);
    }
  }

  // The value of a JavaScript expression in the page, as JSON text
  // ("\"text\"", "3", "true", "null").
  std::string evaluate(const std::string& expression) {
    const std::string result = call("Runtime.evaluate", "{\"expression\":" + json_quote("JSON.stringify((" + expression + "))") +
                                                             ",\"returnByValue\":true,\"awaitPromise\":true}");
    simdjson::dom::parser parser;
    const simdjson::dom::element doc = parser.parse(result);
    if (doc["exceptionDetails"].error() == simdjson::SUCCESS) {
      throw std::runtime_error("the page threw: " + std::string(simdjson::minify(doc["exceptionDetails"])));
    }
    auto value = doc["result"]["value"].get_string();
    return value.error() ? "undefined" : std::string(value.value());
  }

  // Polls `condition` until it is true or `timeout` passes; last() holds
  // what `describe` (an expression) said at the end, for the failure message.
  bool wait_for(const std::string& condition, const std::string& describe = "", std::chrono::seconds timeout = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      bool holds = false;
      try {
        holds = evaluate("!!(" + condition + ")") == "true";
        if (!describe.empty()) last_ = evaluate(describe);
      } catch (const std::runtime_error& e) {
        last_ = e.what();  // e.g. the page is between documents: ask again
      }
      if (holds) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  const std::string& last() const { return last_; }

  // `text` as a JSON (and so JavaScript) string literal.
  static std::string json_quote(const std::string& text) {
    io::JsonWriter w;
    w.value(text);
    return w.take();
  }

  // A phone's screen: `width` x `height` CSS pixels at 3x, touch, mobile.
  void emulate_phone(int width, int height) {
    call("Emulation.setDeviceMetricsOverride", "{\"width\":" + std::to_string(width) + ",\"height\":" + std::to_string(height) +
                                                   ",\"deviceScaleFactor\":3,\"mobile\":true}");
  }

  // The page as a PNG (for docs/: scripts/screenshot-dashboard).
  std::string screenshot_png() {
    const std::string result = call("Page.captureScreenshot", "{\"format\":\"png\",\"captureBeyondViewport\":true}");
    simdjson::dom::parser parser;
    return base64_decode(std::string(parser.parse(result)["data"].get_string().value()));
  }

 private:
  void connect() {
    // Chromium writes its DevTools port into the profile once it listens.
    const auto port_file = profile_ / "DevToolsActivePort";
    std::string port;
    for (int i = 0; i < 600 && port.empty(); ++i) {
      std::ifstream(port_file) >> port;
      if (port.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("chromium exited at start: " + slurp_log());
      }
    }
    if (port.empty()) throw std::runtime_error("chromium never opened its DevTools port: " + slurp_log());
    // The page it opened (about:blank) is the one to drive.
    HttpClient http(static_cast<std::uint16_t>(std::stoi(port)));
    simdjson::dom::parser parser;
    std::string path, listed;
    for (int attempt = 0; attempt < 100 && path.empty(); ++attempt) {  // the tab may register a moment late
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      listed = http.request("GET", "/json/list").body;
      for (auto target : parser.parse(listed).get_array()) {
        if (std::string_view(target["type"].get_string().value()) == "page") {
          const std::string_view url = target["webSocketDebuggerUrl"].get_string().value();
          path = std::string(url.substr(url.find('/', std::string_view("ws://").size())));
          break;
        }
      }
    }
    if (path.empty()) throw std::runtime_error("chromium lists no page: " + listed);
    namespace net = boost::asio;
    net::ip::tcp::resolver resolver(io_);
    ws_ = std::make_unique<boost::beast::websocket::stream<net::ip::tcp::socket>>(io_);
    net::connect(ws_->next_layer(), resolver.resolve("127.0.0.1", port));
    ws_->read_message_max(64 << 20);  // screenshots
    ws_->handshake("127.0.0.1:" + port, path);
  }

  // Sends one DevTools command and returns its "result" object as JSON
  // text; events arriving meanwhile are skipped. Throws on an error reply.
  std::string call(const std::string& method, const std::string& params) {
    const int id = ++next_id_;
    ws_->text(true);
    ws_->write(boost::asio::buffer("{\"id\":" + std::to_string(id) + ",\"method\":\"" + method + "\",\"params\":" + params + "}"));
    simdjson::dom::parser parser;
    for (;;) {
      boost::beast::flat_buffer buffer;
      read_within(buffer, std::chrono::seconds(60), method);
      const std::string message = boost::beast::buffers_to_string(buffer.data());
      const simdjson::dom::element doc = parser.parse(message);
      auto got = doc["id"].get_int64();
      if (got.error() || got.value() != id) continue;
      if (doc["error"].error() == simdjson::SUCCESS) throw std::runtime_error(method + " failed: " + std::string(simdjson::minify(doc["error"])));
      return std::string(simdjson::minify(doc["result"]));
    }
  }

  // One message, or an exception after `limit`: a browser that hangs fails
  // the test instead of holding it until ctest's timeout.
  void read_within(boost::beast::flat_buffer& buffer, std::chrono::seconds limit, const std::string& method) {
    boost::system::error_code ec;
    bool done = false;
    ws_->async_read(buffer, [&](boost::system::error_code e, std::size_t) {
      ec = e;
      done = true;
    });
    io_.restart();
    io_.run_for(limit);
    if (!done) {
      ws_->next_layer().cancel();
      io_.restart();
      io_.run();
      throw std::runtime_error(method + ": chromium did not answer within " + std::to_string(limit.count()) + " s");
    }
    if (ec) throw std::runtime_error(method + ": " + ec.message());
  }

  static std::string base64_decode(const std::string& in) {
    std::string out;
    int bits = 0, value = 0;
    for (const char c : in) {
      int v;
      if (c >= 'A' && c <= 'Z') v = c - 'A';
      else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
      else if (c >= '0' && c <= '9') v = c - '0' + 52;
      else if (c == '+') v = 62;
      else if (c == '/') v = 63;
      else continue;
      value = (value << 6) | v;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out += static_cast<char>((value >> bits) & 0xff);
      }
    }
    return out;
  }

  std::string slurp_log() const {
    std::ifstream f(profile_ / "chromium.log");
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  void shut_down() {
    ws_.reset();
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    std::error_code ignored;
    std::filesystem::remove_all(profile_, ignored);
  }

  std::filesystem::path profile_;
  pid_t pid_ = -1;
  boost::asio::io_context io_;
  std::unique_ptr<boost::beast::websocket::stream<boost::asio::ip::tcp::socket>> ws_;
  int next_id_ = 0;
  std::string last_;
};

}  // namespace ebb::testing
