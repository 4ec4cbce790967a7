// The subcommands of the `vramsim` binary. Each returns the process exit status:
// 0 success, 1 a run that failed, 2 bad usage or bad configuration. They print results on
// stdout and diagnostics on stderr; exceptions (UsageError, ConfigError) reach main().
#pragma once

#include <string>
#include <vector>

namespace vramsim::cli {

int fit_command(const std::vector<std::string>& args);
int import_model_command(const std::vector<std::string>& args);
int list_command(const std::vector<std::string>& args);
int plan_command(const std::vector<std::string>& args);
int run_command(const std::vector<std::string>& args);
int validate_command(const std::vector<std::string>& args);
int sweep_command(const std::vector<std::string>& args);
int report_command(const std::vector<std::string>& args);
int calibrate_command(const std::vector<std::string>& args);
int compare_command(const std::vector<std::string>& args);
int routing_trace_command(const std::vector<std::string>& args);

}  // namespace vramsim::cli
