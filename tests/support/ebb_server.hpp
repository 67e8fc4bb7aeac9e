#pragma once
// Starts the real `ebb serve` on 127.0.0.1 with an ephemeral port (--port 0)
// and a private data directory, waits until /readyz says ready, and stops
// it with SIGTERM (or SIGKILL) on request or at destruction.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/http_client.hpp"

namespace ebb::testing {

inline std::filesystem::path make_temp_dir(const std::string& prefix) {
  std::string templ = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return templ;
}

class EbbServer {
 public:
  // Starts a server on `data_dir` with extra flags; throws if it does not
  // become ready (then `log()` has its stderr). `max_open_files` > 0 sets
  // the server's RLIMIT_NOFILE (soft and hard), to run it out of descriptors.
  EbbServer(std::filesystem::path data_dir, std::vector<std::string> extra = {}, rlim_t max_open_files = 0)
      : data_dir_(std::move(data_dir)) {
    // The server's stderr goes to an unnamed file this object owns (read
    // back by log(), gone with the object): a named one beside the data
    // directory outlived every test run in /tmp.
    log_fd_ = open(std::filesystem::temp_directory_path().c_str(), O_TMPFILE | O_RDWR, 0600);
    if (log_fd_ < 0) throw std::runtime_error("cannot create the server's log file");
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      dup2(log_fd_, 2);
      close(out[0]);
      if (max_open_files > 0) {
        const rlimit limit{max_open_files, max_open_files};
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
      }
      std::vector<std::string> args = {EBB_BINARY, "serve", "--bind", "127.0.0.1", "--port", "0", "--data-dir", data_dir_.string(),
                                       "--threads", "2", "--log-level", "info"};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    // First stdout line: "ebb serve: listening on http://127.0.0.1:PORT".
    std::string line;
    char c;
    while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
    const auto colon = line.rfind(':');
    if (line.find("listening on") == std::string::npos || colon == std::string::npos) {
      close(out[0]);
      fail("ebb serve did not start: '" + line + "'");
    }
    port_ = static_cast<unsigned short>(std::stoi(line.substr(colon + 1)));
    // With --resp-port, a second line: "ebb serve: RESP on 127.0.0.1:PORT (...)".
    if (std::find(extra.begin(), extra.end(), "--resp-port") != extra.end()) {
      line.clear();
      while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
      const auto at = line.find("RESP on ");
      const auto port_colon = at == std::string::npos ? std::string::npos : line.find(':', at);
      if (port_colon == std::string::npos) {
        close(out[0]);
        fail("ebb serve printed no RESP address: '" + line + "'");
      }
      resp_port_ = static_cast<unsigned short>(std::stoi(line.substr(port_colon + 1)));
    }
    close(out[0]);
    HttpClient client(port_);
    for (int i = 0; i < 500; ++i) {
      if (client.request("GET", "/readyz").status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    fail("ebb serve never became ready");
  }
  ~EbbServer() {
    if (pid_ > 0) stop_hard();
    close(log_fd_);
  }
  EbbServer(const EbbServer&) = delete;
  EbbServer& operator=(const EbbServer&) = delete;

  unsigned short port() const { return port_; }
  unsigned short resp_port() const { return resp_port_; }  // with --resp-port
  pid_t pid() const { return pid_; }
  const std::filesystem::path& data_dir() const { return data_dir_; }

  // SIGTERM and wait; returns the exit code.
  int stop() { return stop_with(SIGTERM); }
  // SIGKILL: a crash.
  int stop_hard() { return stop_with(SIGKILL); }
  void signal(int signo) const { kill(pid_, signo); }
  int wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string log() const {
    std::string s;
    char buf[4096];
    ssize_t n;
    for (off_t at = 0; (n = pread(log_fd_, buf, sizeof buf, at)) > 0; at += n) s.append(buf, static_cast<std::size_t>(n));
    return s;
  }

 private:
  // A constructor that throws runs no destructor: kill and close here.
  [[noreturn]] void fail(const std::string& what) {
    stop_hard();
    const std::string message = what + "; log: " + log();
    close(log_fd_);
    throw std::runtime_error(message);
  }
  int stop_with(int signo) {
    if (pid_ <= 0) return -1;
    kill(pid_, signo);
    return wait();
  }
  std::filesystem::path data_dir_;
  int log_fd_ = -1;
  pid_t pid_ = -1;
  unsigned short port_ = 0;
  unsigned short resp_port_ = 0;
};

}  // namespace ebb::testing
