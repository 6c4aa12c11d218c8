// The `tgemm tune` and `tgemm reconfirm` subcommands: their options registered on a CLI11 app
// (tools/cli/main.cpp), parsed into the tuner's option structs (tuner/command.h). Also what the
// host test test_host_cli_args parses the arguments of the processes `tgemm tune` spawns with
// (tuner/command_options.cpp), so an option the worker or the reconfirmation would not read back
// as sent fails there.
#pragma once

#include <CLI/CLI.hpp>

#include "tuner/command.h"

namespace tgemm::cli {

CLI::App* add_tune_command(CLI::App& app, TuneOptions& tune);
CLI::App* add_reconfirm_command(CLI::App& app, ReconfirmOptions& reconfirm);

}  // namespace tgemm::cli
