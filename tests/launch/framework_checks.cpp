#include "framework_checks.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

namespace hetsim::launch::testing {
namespace {

/// Rows of a tests/data/frameworks/*.tsv list: its tab-separated fields, comments left out.
std::vector<std::vector<std::string>> read_list(const std::string& name)
{
  std::ifstream in(std::string(HETSIM_SOURCE_DIR) + "/tests/data/frameworks/" + name);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    std::vector<std::string> fields(1);
    for (char c : line)
      if (c == '\t')
        fields.emplace_back();
      else
        fields.back() += c;
    rows.push_back(fields);
  }
  return rows;
}

struct Option {
  std::string kind; ///< switch, int, float, str, a converter's name; + or * for several values
  std::vector<std::string> choices;
};

using Options = std::map<std::string, Option>;

/// A parser's options from its list (tests/data/frameworks/*.arguments.tsv).
Options read_options(const std::string& list)
{
  Options read;
  for (const auto& row : read_list(list)) {
    Option option{row.at(1), {}};
    std::stringstream choices(row.size() > 2 ? row[2] : "");
    for (std::string choice; std::getline(choices, choice, ',');)
      option.choices.push_back(choice);
    if (!option.choices.empty() && option.choices[0].rfind('?', 0) == 0) // computed at run time
      option.choices.clear();
    read.emplace(row[0], option);
  }
  return read;
}

bool is_integer(const std::string& text)
{
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

bool is_number(const std::string& text)
{
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

/// Parser-level objections: the option exists among `options` (the parser `where` names) and its value converts
/// as argparse would.
void check_parse(const Argument& a, const Options& options, const std::string& where, std::vector<std::string>& out)
{
  const auto found = options.find(a.flag);
  if (found == options.end()) {
    out.push_back(a.flag + ": not an argument of " + where);
    return;
  }
  const Option& option = found->second;
  if (option.kind == "switch") {
    if (!a.value.empty())
      out.push_back(a.flag + " takes no value, got '" + a.value + "'");
    return;
  }
  if (a.value.empty()) {
    out.push_back(a.flag + " expects a value");
    return;
  }
  std::vector<std::string> values;
  if (option.kind.back() == '+' || option.kind.back() == '*') {
    std::stringstream words(a.value);
    for (std::string word; words >> word;)
      values.push_back(word);
  } else {
    values.push_back(a.value);
  }
  const std::string type = option.kind.substr(0, option.kind.find_first_of("+*"));
  for (const std::string& value : values) {
    if ((type == "int" && !is_integer(value)) || (type == "float" && !is_number(value)))
      out.push_back(a.flag + " '" + value + "': argparse converts it with " + type);
    if (!option.choices.empty() && std::find(option.choices.begin(), option.choices.end(), value) == option.choices.end())
      out.push_back(a.flag + " '" + value + "': not one of its choices");
  }
}

class Args {
public:
  explicit Args(const std::vector<Argument>& args)
  {
    for (const Argument& a : args)
      values_[a.flag] = a.value;
  }
  bool has(const std::string& flag) const { return values_.count(flag) == 1; }
  long long integer(const std::string& flag, long long fallback) const
  {
    const auto found = values_.find(flag);
    return found != values_.end() && is_integer(found->second) ? std::stoll(found->second) : fallback;
  }
  std::string text(const std::string& flag) const
  {
    const auto found = values_.find(flag);
    return found == values_.end() ? std::string() : found->second;
  }

private:
  std::map<std::string, std::string> values_;
};

/// validate_args (megatron/training/arguments.py at core_v0.13.0; lines cited) and the config classes it builds.
void check_validate_args(const MegatronLaunch& launch, std::vector<std::string>& out)
{
  const Args args(launch.args);
  const long long tp = args.integer("--tensor-model-parallel-size", 1), pp = args.integer("--pipeline-model-parallel-size", 1);
  const long long cp = args.integer("--context-parallel-size", 1), ep = args.integer("--expert-model-parallel-size", 1);
  const long long model = tp * pp * cp;
  if (model <= 0 || launch.world_size % model != 0) { // arguments.py:382
    out.push_back("arguments.py:382: world size " + std::to_string(launch.world_size) +
                  " is not divisible by tp x pp x cp = " + std::to_string(model));
    return;
  }
  const long long dp = launch.world_size / model;
  const long long micro = args.integer("--micro-batch-size", 0), global = args.integer("--global-batch-size", 0);
  if (micro <= 0 || global <= 0) // arguments.py:487, 494
    out.push_back("arguments.py:487: micro and global batch sizes must be positive");
  else if (global % (micro * dp) != 0) // core/num_microbatches_calculator.py:340
    out.push_back("num_microbatches_calculator.py:340: global batch " + std::to_string(global) +
                  " is not a multiple of micro-batch x data-parallel size " + std::to_string(micro * dp));

  const long long layers = args.integer("--num-layers", 0);
  const bool layout = args.has("--pipeline-model-parallel-layout"), per_virtual = args.has("--num-layers-per-virtual-pipeline-stage");
  long long virtual_size = 1;
  if (int(layout) + int(per_virtual) + int(args.has("--num-virtual-stages-per-pipeline-rank")) > 1) // :497
    out.push_back("arguments.py:497: no more than one of the virtual-stage and layout arguments");
  if (layout) {
    const std::vector<std::string> stages = layout_stages(args.text("--pipeline-model-parallel-layout"));
    if (static_cast<long long>(stages.size()) % pp != 0) // :513
      out.push_back("arguments.py:513: the layout's " + std::to_string(stages.size()) +
                    " stages are not a multiple of pp " + std::to_string(pp));
    virtual_size = static_cast<long long>(stages.size()) / pp;
    std::string flat;
    for (const std::string& stage : stages)
      flat += stage;
    // core/transformer/pipeline_parallel_layer_layout.py:90-102, validate_layer_layout
    if (flat.empty() || flat.front() != 'E' || flat.back() != 'L' || std::count(flat.begin(), flat.end(), 'E') != 1 ||
        std::count(flat.begin(), flat.end(), 'L') != 1)
      out.push_back("pipeline_parallel_layer_layout.py:90: embedding first and once, loss last and once");
    if (std::count(flat.begin(), flat.end(), 't') != layers)
      out.push_back("pipeline_parallel_layer_layout.py:102: the layout's decoder layers must match --num-layers");
  } else if (per_virtual) {
    const long long per_chunk = args.integer("--num-layers-per-virtual-pipeline-stage", 0);
    if (layers % pp != 0) // :536
      out.push_back("arguments.py:536: number of layers must be divisible by pp");
    else if (per_chunk <= 0 || (layers / pp) % per_chunk != 0) // :540
      out.push_back("arguments.py:540: layers per stage must be divisible by layers per virtual stage");
    else
      virtual_size = layers / pp / per_chunk;
  } else if (layers % pp != 0) { // :561
    out.push_back("arguments.py:561: number of layers should be divisible by pp " + std::to_string(pp));
  }
  if (virtual_size > 1 && pp <= 1) // :567, --overlap-p2p-communication on by default
    out.push_back("arguments.py:567: an interleaved schedule needs pp > 1");

  const bool fsdp = args.has("--use-custom-fsdp");
  if (fsdp && !args.has("--use-distributed-optimizer")) // :647
    out.push_back("arguments.py:647: --use-custom-fsdp only supported with distributed optimizer");
  if (fsdp && args.text("--data-parallel-sharding-strategy").rfind("optim_grads", 0) == 0 &&
      !args.has("--no-gradient-accumulation-fusion")) // :652
    out.push_back("arguments.py:652: optim_grads(_params) are not supported with gradient accumulation fusion");
  if (fsdp && launch.one_cuda_connection) // :659
    out.push_back("arguments.py:659: FSDP requires CUDA_DEVICE_MAX_CONNECTIONS other than 1");
  if (args.has("--fp16") && args.has("--bf16")) // :665, 675
    out.push_back("arguments.py:665: --fp16 and --bf16 together");
  if (!args.has("--kv-channels") && args.integer("--num-attention-heads", 1) > 0 &&
      args.integer("--hidden-size", 0) % args.integer("--num-attention-heads", 1) != 0) // :772
    out.push_back("arguments.py:772: hidden size not divisible by the heads, and no --kv-channels");
  if (cp > 1 && args.integer("--seq-length", 0) % (2 * cp) != 0) // :776
    out.push_back("arguments.py:776: seq length not divisible by 2 x cp");
  if (args.has("--max-position-embeddings") &&
      args.integer("--max-position-embeddings", 0) < args.integer("--seq-length", 0)) // :788
    out.push_back("arguments.py:788: max position embeddings below the seq length");
  if (args.has("--moe-grouped-gemm") && !args.has("--bf16")) // :805
    out.push_back("arguments.py:805: GroupedGEMM for MoE only supports bf16");
  const std::string granularity = args.text("--recompute-granularity");
  if (granularity == "selective" && args.has("--recompute-method")) // :843
    out.push_back("arguments.py:843: no recompute method with selective recompute");
  if (granularity == "full" && (!args.has("--recompute-method") || !args.has("--recompute-num-layers")))
    out.push_back("transformer_config.py:786: full recompute needs a recompute method and layer count");
  if (tp == 1 && args.has("--sequence-parallel")) // :850-853 drops it: the run would not be the one simulated
    out.push_back("arguments.py:853: --sequence-parallel at tp 1, which Megatron-LM silently switches off (HetSim's "
                  "rule: the run would not be the one simulated)");
  if ((tp > 1 || cp > 1) && !fsdp && !launch.one_cuda_connection) // :872, before Blackwell
    out.push_back("arguments.py:872: tp or cp > 1 requires CUDA_DEVICE_MAX_CONNECTIONS=1");
  if (args.integer("--num-attention-heads", 0) % tp != 0) // core/transformer/transformer_config.py:646
    out.push_back("transformer_config.py:646: heads must be a multiple of tp");
  if (args.has("--num-query-groups") && args.integer("--num-query-groups", 0) % tp != 0) // transformer_config.py:661
    out.push_back("transformer_config.py:661: query groups must be a multiple of tp");
  for (const char* required : {"--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length",
                               "--max-position-embeddings"}) // arguments.py:754-757 (_check_arg_is_not_none)
    if (!args.has(required))
      out.push_back(std::string("arguments.py:754: ") + required + " is required");
  if (ep > 1) { // :953-957
    const long long experts = args.integer("--num-experts", 0);
    if (experts <= 0 || experts % ep != 0)
      out.push_back("arguments.py:954: experts must be a multiple of ep");
    if (args.has("--fp16"))
      out.push_back("arguments.py:957: expert parallelism is not supported with fp16");
    if (tp > 1 && !args.has("--sequence-parallel")) // core/model_parallel_config.py:385
      out.push_back("model_parallel_config.py:385: ep and tp need sequence parallelism");
  }
}

/// Every argument parsed against `options`, and none given twice.
std::vector<std::string> parse_objections(const MegatronLaunch& launch, const Options& options,
                                          const std::string& where)
{
  std::vector<std::string> out;
  std::map<std::string, int> seen;
  for (const Argument& a : launch.args) {
    check_parse(a, options, where, out);
    if (++seen[a.flag] == 2)
      out.push_back(a.flag + " given twice (argparse keeps the last: an export bug, not the framework's rule)");
  }
  return out;
}

/// Megatron-DeepSpeed's validate_args (megatron/arguments.py at 4efb479d; lines cited), the microbatch calculator
/// and the model code HetSim's exports could trip.
void check_megatron_deepspeed(const MegatronLaunch& launch, std::vector<std::string>& out)
{
  const Args args(launch.args);
  const long long tp = args.integer("--tensor-model-parallel-size", 1), pp = args.integer("--pipeline-model-parallel-size", 1);
  const long long sp = args.integer("--ds-sequence-parallel-size", 1);
  if (tp <= 0 || launch.world_size % tp != 0) // :75
    out.push_back("arguments.py:75: world size " + std::to_string(launch.world_size) + " is not divisible by tp");
  if (args.has("--no-pipeline-parallel") && pp != 1) // :95
    out.push_back("arguments.py:95: pipeline_model_parallel_size must be 1 if pipeline parallel is disabled");
  const long long model = tp * pp * sp;
  if (model <= 0 || launch.world_size % model != 0) { // :104
    out.push_back("arguments.py:104: world size " + std::to_string(launch.world_size) +
                  " is not divisible by tp x pp x sequence parallel = " + std::to_string(model));
    return;
  }
  const long long dp = launch.world_size / model;
  const long long micro = args.integer("--micro-batch-size", 0), global = args.integer("--global-batch-size", 0);
  if (micro <= 0) // :164-165
    out.push_back("arguments.py:165: micro batch size must be positive");
  else if (global <= 0) // :171
    out.push_back("arguments.py:171: global batch size must be positive");
  else if (global % (micro * dp) != 0) // megatron/microbatches.py:64
    out.push_back("microbatches.py:64: global batch " + std::to_string(global) +
                  " is not divisible by micro-batch x data-parallel size " + std::to_string(micro * dp));
  if (args.has("--num-layers-per-virtual-pipeline-stage") && pp <= 2) // :173
    out.push_back("arguments.py:173: an interleaved schedule needs pp > 2");
  if (args.has("--fp16") && args.has("--bf16")) // :188, 191
    out.push_back("arguments.py:188: --fp16 and --bf16 together");
  for (const char* required : {"--num-layers", "--hidden-size", "--num-attention-heads", "--max-position-embeddings"})
    if (!args.has(required)) // :279-283
      out.push_back(std::string("arguments.py:283: ") + required + " is required");
  const long long heads = args.integer("--num-attention-heads", 0);
  if (!args.has("--kv-channels") && (heads <= 0 || args.integer("--hidden-size", 0) % heads != 0)) // :299
    out.push_back("arguments.py:299: hidden size not divisible by the heads, and no --kv-channels");
  if (args.integer("--max-position-embeddings", 0) < args.integer("--seq-length", 0)) // :311
    out.push_back("arguments.py:311: max position embeddings below the seq length");
  const std::string granularity = args.text("--recompute-granularity");
  if (granularity == "selective" && args.has("--recompute-method")) // :380
    out.push_back("arguments.py:380: no recompute method with selective recompute");
  if (tp == 1 && args.has("--sequence-parallel")) // :387-388 drops it: the run would not be the one simulated
    out.push_back("arguments.py:388: --sequence-parallel at tp 1, which Megatron-DeepSpeed silently switches off "
                  "(HetSim's rule: the run would not be the one simulated)");
  if (args.has("--sequence-parallel") && !launch.one_cuda_connection) // :403-407
    out.push_back("arguments.py:406: sequence parallelism requires CUDA_DEVICE_MAX_CONNECTIONS=1");
  const long long kv_heads = args.integer("--num-key-value-heads", heads);
  if (kv_heads <= 0 || heads % kv_heads != 0) // :446
    out.push_back("arguments.py:446: heads must be divisible by key-value heads");
  if (heads % tp != 0) // megatron/model/transformer.py:562-563, core.utils.divide
    out.push_back("transformer.py:562: heads must be a multiple of tp");
  if (kv_heads > 0 && kv_heads % tp != 0) // megatron/model/transformer.py:566-567
    out.push_back("transformer.py:566: key-value heads must be a multiple of tp");
  // pretrain_gpt.py:51 builds GPTModelPipe, DeepSpeed's pipeline, only under --deepspeed; without it or without
  // a config the run is Megatron's own, not the one simulated (HetSim's rule).
  if (!args.has("--deepspeed") || !args.has("--deepspeed_config"))
    out.push_back("pretrain_gpt.py:51: --deepspeed and --deepspeed_config are what run DeepSpeed's engine "
                  "(HetSim's rule)");
  if (args.integer("--zero-stage", 1) > 1 && pp > 1 && !args.has("--no-pipeline-parallel"))
    out.push_back("deepspeed/runtime/pipe/engine.py:78: ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism");
}

/// The type a DeepSpeed reader takes a value as; true when `value` is one. Types are the list's: a default's
/// Python type, a pydantic annotation, or enum:VALUES.
bool deepspeed_type_holds(const std::string& type, const nlohmann::json& value)
{
  std::string bare = type;
  if (bare.rfind("Optional[", 0) == 0) {
    if (value.is_null())
      return true;
    bare = bare.substr(9, bare.size() - 10);
  }
  if (bare == "bool")
    return value.is_boolean();
  if (bare == "int")
    return value.is_number_integer();
  if (bare == "float")
    return value.is_number();
  if (bare == "str")
    return value.is_string();
  if (bare == "dict")
    return value.is_object();
  if (bare.rfind("enum:", 0) == 0) {
    std::stringstream values(bare.substr(5));
    for (std::string v; std::getline(values, v, ',');)
      if (value.dump() == v || (value.is_string() && value.get<std::string>() == v))
        return true;
    return false;
  }
  return true; // any, or a type the list does not narrow
}

} // namespace

std::vector<std::string> megatron_objections(const MegatronLaunch& launch)
{
  static const Options options = read_options("megatron_core_v0.13.0.arguments.tsv");
  std::vector<std::string> out = parse_objections(launch, options, "megatron/training/arguments.py at core_v0.13.0");
  check_validate_args(launch, out);
  return out;
}

std::vector<std::string> megatron_deepspeed_objections(const MegatronLaunch& launch)
{
  static const Options options = read_options("megatron_deepspeed_4efb479d.arguments.tsv");
  std::vector<std::string> out =
      parse_objections(launch, options, "Megatron-DeepSpeed's megatron/arguments.py at 4efb479d, nor DeepSpeed's");
  check_megatron_deepspeed(launch, out);
  return out;
}

std::vector<std::string> deepspeed_objections(const nlohmann::json& config, int world_size, int pipeline_stages,
                                              int tensor_parallel)
{
  static const std::map<std::string, std::map<std::string, std::string>> keys = [] {
    std::map<std::string, std::map<std::string, std::string>> read;
    for (const auto& row : read_list("deepspeed_v0.17.4.config_keys.tsv"))
      read[row.at(0)][row.at(1)] = row.at(2);
    return read;
  }();
  std::vector<std::string> out;
  for (const auto& [key, value] : config.items()) {
    const auto& top = keys.at(".");
    if (top.count(key) == 0) {
      out.push_back(key + ": not a key DeepSpeed v0.17.4 reads");
      continue;
    }
    if (!deepspeed_type_holds(top.at(key), value))
      out.push_back(key + ": " + value.dump() + " is not " + top.at(key));
    if (!value.is_object())
      continue;
    const auto section = keys.find(key);
    if (section == keys.end()) {
      out.push_back(key + ": a section HetSim writes but the list does not hold");
      continue;
    }
    for (const auto& [inner, inner_value] : value.items()) {
      const auto found = section->second.find(inner);
      if (found == section->second.end())
        out.push_back(key + "." + inner + ": not a key DeepSpeed v0.17.4 reads");
      else if (!deepspeed_type_holds(found->second, inner_value))
        out.push_back(key + "." + inner + ": " + inner_value.dump() + " is not " + found->second);
    }
  }
  // runtime/config.py:882 (_batch_assertion): the batch is micro-batch x accumulation x data-parallel size, the
  // data-parallel size being the processes over the pipeline's stages and tensor-parallel ranks (the mpu's,
  // config.py:672: PipelineModule's grid, or Megatron's without a pipeline).
  const long long dp = pipeline_stages > 0 && tensor_parallel > 0 ? world_size / pipeline_stages / tensor_parallel : 0;
  const auto number  = [&](const char* key) { return config.value(key, 0LL); };
  if (number("train_batch_size") != number("train_micro_batch_size_per_gpu") * number("gradient_accumulation_steps") * dp)
    out.push_back("runtime/config.py:882: train_batch_size is not micro-batch x accumulation x data-parallel size");
  const auto enabled = [&](const char* section) {
    return config.contains(section) && config[section].value("enabled", false);
  };
  if (enabled("fp16") && enabled("bf16")) // runtime/config.py:782
    out.push_back("runtime/config.py:782: bfloat16 and fp16 modes cannot be simultaneously enabled");
  const int stage = config.contains("zero_optimization") ? config["zero_optimization"].value("stage", 0) : 0;
  if (pipeline_stages > 1 && stage >= 2) // runtime/pipe/engine.py:78
    out.push_back("runtime/pipe/engine.py:78: ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism");
  if (const auto type = config.find("communication_data_type");
      type != config.end() && !type->is_null()) { // runtime/config.py:193-207: null, or lowercased one of three
    std::string name = type->is_string() ? type->get<std::string>() : type->dump();
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name != "fp32" && name != "fp16" && name != "bf16")
      out.push_back("runtime/config.py:207: communication_data_type '" + name + "' is not fp16, bf16 or fp32");
  }
  return out;
}

std::vector<Argument> changed(std::vector<Argument> args, const std::vector<Argument>& change)
{
  for (const Argument& a : change) {
    const auto same = std::find_if(args.begin(), args.end(), [&](const Argument& b) { return b.flag == a.flag; });
    if (same == args.end())
      args.push_back(a);
    else if (a.value == "-")
      args.erase(same);
    else
      same->value = a.value;
  }
  return args;
}

std::vector<std::string> layout_stages(const std::string& layout)
{
  std::vector<std::string> stages(1);
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const char c = layout[i];
    if (c == '|') {
      stages.emplace_back();
    } else if (c == '*') {
      std::size_t end = i + 1;
      while (end < layout.size() && std::isdigit(static_cast<unsigned char>(layout[end])))
        ++end;
      const int count = std::stoi(layout.substr(i + 1, end - i - 1));
      stages.back().append(count - 1, stages.back().back());
      i = end - 1;
    } else if (c != ',') {
      stages.back() += c;
    }
  }
  return stages;
}

MegatronLaunch read_megatron_args_sh(const std::string& text, int world_size)
{
  MegatronLaunch launch;
  launch.world_size = world_size;
  std::istringstream lines(text);
  bool inside = false;
  for (std::string line; std::getline(lines, line);) {
    if (line == "export CUDA_DEVICE_MAX_CONNECTIONS=1")
      launch.one_cuda_connection = true;
    if (line == "MEGATRON_ARGS=(") {
      inside = true;
      continue;
    }
    if (!inside || line == ")") {
      inside = inside && line != ")";
      continue;
    }
    const std::size_t start = line.find("--");
    const std::size_t space = line.find(' ', start);
    Argument a{line.substr(start, space - start), space == std::string::npos ? "" : line.substr(space + 1)};
    if (a.value.size() >= 2 && (a.value.front() == '\'' || a.value.front() == '"') && a.value.back() == a.value.front())
      a.value = a.value.substr(1, a.value.size() - 2);
    launch.args.push_back(a);
  }
  return launch;
}

std::map<std::string, std::string> launched_megatron(const ExportInputs& inputs)
{
  const std::vector<ExportFile> files = export_plan(inputs, ExportFormat::megatron);
  REQUIRE(files.size() == 1);
  const MegatronLaunch launch =
      read_megatron_args_sh(files[0].content, static_cast<int>(inputs.plan->placement.size()));
  for (const std::string& objection : megatron_objections(launch))
    FAIL_CHECK("Megatron-LM core_v0.13.0 objects: " << objection);
  std::map<std::string, std::string> flags;
  for (const Argument& a : launch.args)
    flags[a.flag] = a.value;
  return flags;
}

std::map<std::string, std::string> launched_megatron_deepspeed(const ExportInputs& inputs)
{
  const std::vector<ExportFile> files = export_plan(inputs, ExportFormat::megatron_deepspeed);
  REQUIRE(files.size() == 2);
  REQUIRE(files[0].name == "megatron_deepspeed_args.sh");
  REQUIRE(files[1].name == "ds_config.json");
  const strategies::Plan& plan = *inputs.plan;
  const int world              = static_cast<int>(plan.placement.size());
  const MegatronLaunch launch  = read_megatron_args_sh(files[0].content, world);
  for (const std::string& objection : megatron_deepspeed_objections(launch))
    FAIL_CHECK("Megatron-DeepSpeed 4efb479d objects: " << objection);
  for (const std::string& objection : deepspeed_objections(nlohmann::json::parse(files[1].content), world, plan.pp, plan.tp))
    FAIL_CHECK("DeepSpeed v0.17.4 objects: " << objection);
  std::map<std::string, std::string> flags;
  for (const Argument& a : launch.args)
    flags[a.flag] = a.value;
  return flags;
}

} // namespace hetsim::launch::testing
