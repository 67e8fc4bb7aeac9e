// ebb: what is hot right now? One binary, one subcommand per front end.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "allocator_tuning.hpp"
#include "client_commands.hpp"
#include "serve_command.hpp"
#include "version.hpp"
#include "top_options.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ebb: heavy hitters over event streams, now (decayed) and all-time, with honest error bounds"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("ebb ") + ebb::cli::kVersion);
  // A TOML/INI file of options: `[serve]` then `port = 9090`, ... Given
  // anywhere on the command line (`ebb serve --config ebb.toml`); flags win.
  app.set_config("--config", "", "Read options from a TOML or INI file: a [serve] or [top] section of long option names");
  app.fallthrough();

  ebb::cli::TopOptions top;
  CLI::App* top_cmd = ebb::cli::add_top_command(app, top);
  ebb::cli::ServeOptions serve;
  CLI::App* serve_cmd = ebb::cli::add_serve_command(app, serve);
  ebb::cli::SendOptions send;
  CLI::App* send_cmd = ebb::cli::add_send_command(app, send);
  ebb::cli::QueryOptions query;
  CLI::App* query_cmd = ebb::cli::add_query_command(app, query);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the usage error
    return code == 0 ? 0 : 2;
  }
  try {
    if (top_cmd->parsed() || serve_cmd->parsed()) ebb::cli::keep_freed_memory_for_reuse();
    if (top_cmd->parsed()) return ebb::cli::run_top(top);
    if (serve_cmd->parsed()) return ebb::cli::run_serve(serve);
    if (send_cmd->parsed()) return ebb::cli::run_send(send);
    if (query_cmd->parsed()) return ebb::cli::run_query(query);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ebb: %s\n", e.what());
    return 1;
  }
  return 0;
}
