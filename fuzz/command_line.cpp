#include "fuzz/command_line.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "fuzz/memory_cap.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string_view>

extern char** environ;

namespace hetsim::fuzz {
namespace {

namespace fs = std::filesystem;

/// The inputs the seeds name, by their "@" name: copied from the repository, or written here.
const std::map<std::string, std::string>& input_sources()
{
  static const std::map<std::string, std::string> sources = {
      {"cluster4.json", "tests/exec/data/cluster4.json"},
      {"model4.json", "tests/exec/data/model4.json"},
      {"dp4.json", "tests/exec/data/dp4.json"},
      {"trace.json", "fuzz/seeds/trace/rank1.json"},
  };
  return sources;
}

/// Inputs written by the harness: a jobs file that names other files, a table, slowdowns.
const std::map<std::string, std::string>& written_inputs()
{
  static const std::map<std::string, std::string> inputs = {
      {"jobs.json", R"({"jobs": [{"name": "a", "nodes": ["e.0", "w.0"], "model": "model4.json", "planner": "megatron",
                      "global_batch": 4}, {"name": "b", "nodes": ["e.1", "w.1"], "model": "model4.json",
                      "plan": "dp2.json"}]})"},
      {"dp2.json", R"({"tp": 1, "pp": 1, "dp": 2, "stage_starts": [0], "micro_batch": 1, "grad_accum": 1})"},
      {"table.csv", "cluster,planner,seed,simulated_s\na,amp,1,1\na,amp,2,1.5\nb,amp,1,2\nb,hethub,1,3\n"},
      {"slowdowns.json", R"({"nics": [{"node": "e.0", "rate": 0.5}]})"},
  };
  return inputs;
}

/// What each input of the work folder must still hold after a command.
std::map<std::string, std::string> expected_inputs(const CommandContext& context)
{
  std::map<std::string, std::string> expected = written_inputs();
  for (const auto& [name, source] : input_sources())
    expected[name] = read_input_file((context.root / source).string());
  return expected;
}

/// Whether `file` still holds `content`: a file a command replaced by a pipe or a directory does not.
bool holds(const fs::path& file, const std::string& content)
{
  try {
    return read_input_file(file.string()) == content;
  } catch (const InputError&) {
    return false;
  }
}

std::size_t pick(std::mt19937_64& random, std::size_t count)
{
  return std::uniform_int_distribution<std::size_t>(0, count - 1)(random);
}

/// What a careless or hostile user types where a value goes.
constexpr std::array<std::string_view, 34> kHostileValues = {
    "", "nan", "inf", "-inf", "-1", "0", "-0", "1e309", "1e-320", "99999999999999999999", "2147483648", "0x10",
    "1,2", "a\nb", "x\x1b[31m", "na\u202Eme", "\t", "/dev/zero", "/dev/null", ".", "@fifo", "@missing.json",
    "@out", "@out/", "preset:moon", "preset:case5_worldwide_geo", "preset:gpt3-1.3b", "@cluster4.json",
    "@model4.json", "@jobs.json", "@dp4.json", "@trace.json", "1e18", "--"};
constexpr std::array<std::string_view, 12> kSubcommands = {
    "simulate", "search", "inspect", "export", "generate-cluster", "validate", "plot", "calibrate", "profile",
    "sweep", "inspect cluster", "bogus"};

std::vector<std::string> parse_argv(const std::string& text)
{
  std::vector<std::string> argv;
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_array())
    return {"simulate"};
  for (const auto& item : doc)
    argv.push_back(item.is_string() ? item.get<std::string>() : item.dump());
  return argv;
}

/// Indexes of the arguments that are outputs of the work folder ("@out/...").
std::vector<std::size_t> outputs_of(const std::vector<std::string>& argv)
{
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < argv.size(); ++i)
    if (argv[i].starts_with("@out/"))
      at.push_back(i);
  return at;
}

void mutate_once(std::vector<std::string>& argv, std::mt19937_64& random)
{
  if (argv.empty()) {
    argv.push_back("simulate");
    return;
  }
  const std::size_t at = pick(random, argv.size());
  switch (pick(random, 9)) {
    case 0:
    case 1: // a value as a user should not give it
      argv[at] = std::string(kHostileValues[pick(random, kHostileValues.size())]);
      break;
    case 2: // an argument dropped (a value left without its option, or an option without its value)
      argv.erase(argv.begin() + static_cast<std::ptrdiff_t>(at));
      break;
    case 3: // an option given twice
      argv.insert(argv.begin() + static_cast<std::ptrdiff_t>(at), argv[at]);
      break;
    case 4: { // an output named as an input
      const auto outputs = outputs_of(argv);
      if (!outputs.empty())
        argv[outputs[pick(random, outputs.size())]] = pick(random, 2) ? "@model4.json" : "@jobs.json";
      break;
    }
    case 5: { // one file for two outputs
      const auto outputs = outputs_of(argv);
      if (outputs.size() >= 2)
        argv[outputs[1]] = argv[outputs[0]];
      break;
    }
    case 6: // a control character or a bidirectional override inside a value
      argv[at] += pick(random, 2) ? "\n" : "\u202E";
      break;
    case 7: // another subcommand for the same options
      argv[0] = std::string(kSubcommands[pick(random, kSubcommands.size())]);
      break;
    default: // an option that does not exist, or a known one without a value at the end
      argv.push_back(pick(random, 2) ? "--bogus" : "--report");
      break;
  }
}

/// The arguments as the child gets them: "@NAME" in the work folder; "inspect cluster" as two words.
std::vector<std::string> resolved(const CommandContext& context, const std::vector<std::string>& argv)
{
  std::vector<std::string> out = {context.cli.string()};
  for (const std::string& arg : argv) {
    if (arg == "inspect cluster") {
      out.push_back("inspect");
      out.push_back("cluster");
    } else {
      out.push_back(arg.starts_with("@") ? (context.work / arg.substr(1)).string() : arg);
    }
  }
  return out;
}

struct ChildResult {
  bool timed_out = false;
  int status     = 0;
  std::string stderr_text; ///< its last 64 KiB
};

ChildResult run_child(const CommandContext& context, const std::vector<std::string>& args)
{
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw InputError(std::string("fuzz: cannot make a pipe: ") + std::strerror(errno));
  // Everything the child needs is built before fork: after it only async-signal-safe calls are allowed.
  std::vector<std::string> storage = args;
  std::vector<char*> argv;
  for (auto& arg : storage)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> environment;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "HETSIM_SILENT_PIPE_S=", 21) != 0)
      environment.emplace_back(*e);
  environment.emplace_back("HETSIM_SILENT_PIPE_S=0.2"); // a pipe no one writes to is refused at once
  std::vector<char*> envp;
  for (auto& entry : environment)
    envp.push_back(entry.data());
  envp.push_back(nullptr);
  const std::string work = context.work.string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0); // its own group: a command that starts ranks is ended with them
    const rlimit cap{kMemoryCapBytes, kMemoryCapBytes};
    ::setrlimit(RLIMIT_AS, &cap);
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(pipe_fds[1], 2);
    if (::chdir(work.c_str()) != 0)
      ::_exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  if (pid < 0)
    throw InputError(std::string("fuzz: cannot start a command: ") + std::strerror(errno));
  ::setpgid(pid, pid); // as the child does: whichever runs first, the group exists before it is killed
  ::close(pipe_fds[1]);
  ChildResult result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(context.time_limit_s);
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd ready{pipe_fds[0], POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0)
      continue;
    const ssize_t got = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (got <= 0)
      break;
    result.stderr_text.append(buffer, static_cast<std::size_t>(got));
    if (result.stderr_text.size() > (64u << 10))
      result.stderr_text.erase(0, result.stderr_text.size() - (64u << 10));
  }
  ::close(pipe_fds[0]);
  ::waitpid(pid, &result.status, 0);
  ::kill(-pid, SIGKILL); // anything it left in its group
  return result;
}

/// The work folder's files the command reads: every "@NAME" it is given but as the value of an output option,
/// and the files a jobs file it reads names. Only these must be left as they were: a file named as an output
/// is the user's to replace.
std::set<std::string> inputs_read(const std::vector<std::string>& argv)
{
  static const std::set<std::string> kOutputOptions = {"--report", "--out", "--best", "--table", "--json",
                                                       "--trace-dir", "--keep"};
  const bool simulate = !argv.empty() && argv[0] == "simulate"; // its --trace is an output; elsewhere an input
  std::set<std::string> read;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const bool output = i > 0 && (kOutputOptions.count(argv[i - 1]) || (simulate && argv[i - 1] == "--trace"));
    if (!output && argv[i].starts_with("@"))
      read.insert(argv[i].substr(1));
  }
  if (read.count("jobs.json"))
    read.insert({"model4.json", "dp2.json"});
  return read;
}

std::string last_line(std::string text)
{
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text.substr(text.rfind('\n') + 1);
}

/// Fresh copies of the inputs (one an earlier command replaced is restored), the pipe "@fifo" no process writes
/// to, and an empty output folder "@out".
void prepare_command_folder(const CommandContext& context, const std::map<std::string, std::string>& inputs)
{
  fs::create_directories(context.work);
  for (const auto& [name, content] : inputs) {
    std::error_code ignored;
    fs::permissions(context.work / name, fs::perms::owner_all, fs::perm_options::add, ignored);
    std::ofstream(context.work / name, std::ios::binary | std::ios::trunc) << content;
  }
  fs::remove_all(context.work / "out");
  fs::create_directories(context.work / "out");
  const fs::path fifo = context.work / "fifo";
  if (!fs::is_fifo(fifo)) {
    fs::remove_all(fifo);
    if (::mkfifo(fifo.c_str(), 0600) != 0)
      throw InputError("fuzz: cannot make " + fifo.string() + ": " + std::strerror(errno));
  }
}

} // namespace

std::string mutate_command_line(const std::string& text, std::mt19937_64& random)
{
  std::vector<std::string> argv = parse_argv(text);
  for (std::size_t rounds = pick(random, 3) + 1; rounds > 0; --rounds)
    mutate_once(argv, random);
  return nlohmann::json(argv).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::string> command_line_violation(const CommandContext& context, const std::string& argv_json,
                                                  bool& refused)
{
  refused                  = false;
  const auto inputs        = expected_inputs(context);
  const auto argv          = parse_argv(argv_json);
  prepare_command_folder(context, inputs);
  const ChildResult child = run_child(context, resolved(context, argv));
  std::optional<std::string> violation;
  const std::string tail = last_line(child.stderr_text);
  if (child.timed_out) {
    violation = "no answer within " + std::to_string(static_cast<int>(context.time_limit_s)) + " s (a hang)";
  } else if (WIFSIGNALED(child.status)) {
    violation = "killed by signal " + std::to_string(WTERMSIG(child.status)) + " (" + ::strsignal(WTERMSIG(child.status)) +
                "): " + quote(tail, 300);
  } else if (WEXITSTATUS(child.status) == 2) {
    refused = true;
    const std::size_t size = child.stderr_text.size();
    if (!tail.starts_with("hetsim: "))
      violation = "an error that is not one \"hetsim: \" line: " +
                  quote(child.stderr_text.substr(size > 600 ? size - 600 : 0), 600);
  } else if (WEXITSTATUS(child.status) != 0 && WEXITSTATUS(child.status) != 1) {
    violation = "exit code " + std::to_string(WEXITSTATUS(child.status)) + ": " + quote(tail, 300);
  }
  // Nothing the user gave is overwritten: every input the command read still holds what it held.
  const auto read = inputs_read(argv);
  for (const auto& [name, content] : inputs)
    if (!violation && read.count(name) && !holds(context.work / name, content))
      violation = "the input " + name + " was replaced";
  return violation;
}

} // namespace hetsim::fuzz
