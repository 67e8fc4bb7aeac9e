#pragma once
// Starts a real `nats-server -js` on 127.0.0.1 with a random port and a
// private store directory (the cluster tests' JetStream), and stops it at
// destruction. available() says whether the binary is installed at all
// (scripts/bootstrap installs it; tests skip with a message without it).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace ebb::testing {

class NatsServer {
 public:
  static std::string binary() {
    for (const char* dir : {"/usr/bin", "/usr/sbin", "/usr/local/bin"}) {
      const auto path = std::filesystem::path(dir) / "nats-server";
      if (std::filesystem::exists(path)) return path.string();
    }
    return "";
  }
  static bool available() { return !binary().empty(); }

  // `max_payload`: the largest message the server takes (0: its default, 1 MiB).
  explicit NatsServer(std::filesystem::path dir, std::size_t max_payload = 0) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
    const std::string log = (dir_ / "nats.log").string();
    const std::string config = (dir_ / "nats.conf").string();
    if (max_payload > 0) std::ofstream(config) << "max_payload: " << max_payload << "\n";
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<std::string> args = {binary(), "-js", "-a", "127.0.0.1", "-p", "-1", "-sd", (dir_ / "store").string(), "-l", log};
      if (max_payload > 0) args.insert(args.end(), {"-c", config});
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    // Its log names the port it took: "Listening for client connections on 127.0.0.1:NNNN".
    const std::regex listening(R"(Listening for client connections on 127\.0\.0\.1:(\d+))");
    for (int i = 0; i < 1000; ++i) {
      std::ifstream in(log);
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      std::smatch m;
      if (std::regex_search(s, m, listening) && s.find("Server is ready") != std::string::npos) {
        port_ = static_cast<unsigned short>(std::stoi(m[1]));
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop();
    throw std::runtime_error("nats-server did not start; its log is in " + log);
  }
  ~NatsServer() { stop(); }
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  unsigned short port() const { return port_; }
  std::string url() const {
    std::string u = "nats://127.0.0.1:";
    u += std::to_string(port_);
    return u;
  }
  void signal(int signo) const { kill(pid_, signo); }  // (SIGSTOP: a server that stops answering)
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGCONT);  // (a paused one too)
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  unsigned short port_ = 0;
};

}  // namespace ebb::testing
