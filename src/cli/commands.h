// The subcommands of the `nanogpt` binary. Each takes the arguments after its name (config files
// and --key=value overrides), runs, and returns the process exit code. Errors are thrown as
// nanogpt::Error and printed by main.
#pragma once

#include <string>
#include <vector>

namespace nanogpt::cli {

using Args = std::vector<std::string>;

int prepare_command(const Args& args);
int train_command(const Args& args);
int sample_command(const Args& args);
int export_command(const Args& args);
int estimate_command(const Args& args);
int sweep_command(const Args& args);
int report_command(const Args& args);
int autotune_command(const Args& args);

// Key tables for `nanogpt help <command>` / `nanogpt <command> --help`.
std::string prepare_help();
std::string train_help();
std::string sample_help();
std::string export_help();
std::string estimate_help();
std::string sweep_help();
std::string report_help();
std::string autotune_help();

// True if args ask for help (--help or -h anywhere).
bool wants_help(const Args& args);

// For sample / export with init_from = 'resume': an error saying how to get a checkpoint when
// out_dir has none (no run wrote one there yet).
void require_checkpoint(const std::string& init_from, const std::string& out_dir,
                        const char* command);

}  // namespace nanogpt::cli
