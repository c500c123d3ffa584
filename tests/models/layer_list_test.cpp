#include "models/layer_list.hpp"

#include "input_error.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace hetsim::models;
using hetsim::models::test::input_error_of;
using nlohmann::json;

namespace {

json layer(const std::string& name, const std::string& kind)
{
  return json{{"name", name},
              {"kind", kind},
              {"params", 1000},
              {"forward_flops_per_sample", 5e6},
              {"activation_bytes_per_sample", 64},
              {"saved_activation_bytes_per_sample", 256}};
}

json four_layers()
{
  return json{{"name", "toy"},
              {"seq_len", 8},
              {"layers", json::array({layer("in", "embedding"), layer("a", "attention"), layer("m", "mlp"),
                                      layer("out", "head")})}};
}

std::string error_of(const json& model)
{
  return input_error_of([&] { workload_from_json(model, "model.json"); });
}

} // namespace

TEST_CASE("a layer list reads as written, with defaults for the optional fields")
{
  json model = four_layers();
  model["layers"][1]["backward_flops_per_sample"] = 7e6;
  model["layers"][2]["tensor_parallel_all_reduces"] = 0;
  Workload w = workload_from_json(model, "model.json");
  CHECK(w.name == "toy");
  CHECK(w.seq_len == 8);
  REQUIRE(w.layers.size() == 4);
  CHECK(w.layers[0].name == "in");
  CHECK(w.layers[0].kind == "embedding");
  CHECK(w.layers[0].params == 1000);
  CHECK(w.layers[0].forward_flops_per_sample == 5e6);
  CHECK(w.layers[0].backward_flops_per_sample == 10e6); // 2x forward by default
  CHECK(w.layers[1].backward_flops_per_sample == 7e6);
  CHECK(w.layers[0].activation_bytes_per_sample == 64);
  CHECK(w.layers[0].saved_activation_bytes_per_sample == 256);
  CHECK(w.layers[0].tensor_parallel_all_reduces == 1); // by kind
  CHECK(w.layers[1].tensor_parallel_all_reduces == 1);
  CHECK(w.layers[2].tensor_parallel_all_reduces == 0); // given
  CHECK(w.layers[3].tensor_parallel_all_reduces == 0);
  CHECK(w.total_params() == 4000);
  CHECK(w.forward_flops_per_sample() == 20e6);
  CHECK(w.backward_flops_per_sample() == 37e6);
}

TEST_CASE("a layer list without a name is named after its file")
{
  json model = four_layers();
  model.erase("name");
  CHECK(workload_from_json(model, "dir/my_model.json").name == "my_model");

  auto file = std::filesystem::temp_directory_path() / "hetsim_models_layer_list_test.json";
  std::ofstream(file) << model.dump();
  Workload w = load_workload(file.string());
  std::filesystem::remove(file);
  CHECK(w.name == "hetsim_models_layer_list_test");
  CHECK(w.layers.size() == 4);
}

TEST_CASE("bad layer lists are InputErrors naming the file and the JSON path")
{
  json model = four_layers();
  SUBCASE("wrong type")
  {
    model["layers"][3]["params"] = "x";
    CHECK(error_of(model) == "model.json: layers[3].params: expected a non-negative number of at most 1e+13, got string \"x\"");
  }
  SUBCASE("negative number")
  {
    model["layers"][1]["forward_flops_per_sample"] = -1;
    CHECK(error_of(model) == "model.json: layers[1].forward_flops_per_sample: expected a non-negative number of at most 1e+18, got number -1");
  }
  SUBCASE("a figure no layer has, whose sums would leave double's range (1e308 FLOPs gave a NaN duration)")
  {
    model["layers"][1]["forward_flops_per_sample"] = 1e308;
    CHECK(error_of(model) == "model.json: layers[1].forward_flops_per_sample: expected a non-negative number of at "
                             "most 1e+18, got number 1e+308");
    model["layers"][1]["forward_flops_per_sample"] = 1e9;
    model["layers"][0]["saved_activation_bytes_per_sample"] = 2e15;
    CHECK(error_of(model).find("model.json: layers[0].saved_activation_bytes_per_sample: expected a non-negative "
                               "number of at most 1e+15") == 0);
  }
  SUBCASE("negative optional number")
  {
    model["layers"][2]["backward_flops_per_sample"] = -2.5;
    CHECK(error_of(model) == "model.json: layers[2].backward_flops_per_sample: expected a non-negative number of at most 1e+18, got number -2.5");
  }
  SUBCASE("missing field")
  {
    model["layers"][2].erase("saved_activation_bytes_per_sample");
    CHECK(error_of(model) == "model.json: layers[2]: missing required field 'saved_activation_bytes_per_sample'");
  }
  SUBCASE("missing kind")
  {
    model["layers"][0].erase("kind");
    CHECK(error_of(model) == "model.json: layers[0]: missing required field 'kind'");
  }
  SUBCASE("empty name")
  {
    model["layers"][0]["name"] = "";
    CHECK(error_of(model) == "model.json: layers[0].name: expected a non-empty string, got string \"\"");
  }
  SUBCASE("unknown layer field")
  {
    model["layers"][1]["flops"] = 1;
    CHECK(error_of(model).starts_with("model.json: layers[1]: unknown field 'flops'; known fields: name, kind, params"));
  }
  SUBCASE("unknown top-level field")
  {
    model["seq_length"] = 8;
    CHECK(error_of(model).starts_with("model.json: (top level): unknown field 'seq_length'; known fields: name"));
  }
  SUBCASE("empty layers")
  {
    model["layers"] = json::array();
    CHECK(error_of(model) == "model.json: layers: expected at least one layer, got an empty array");
  }
  SUBCASE("layers not an array")
  {
    model["layers"] = json::object();
    CHECK(error_of(model) == "model.json: layers: expected an array, got object");
  }
  SUBCASE("layer not an object")
  {
    model["layers"][2] = 3;
    CHECK(error_of(model) == "model.json: layers[2]: expected an object, got number 3");
  }
  SUBCASE("seq_len zero")
  {
    model["seq_len"] = 0;
    CHECK(error_of(model) == "model.json: seq_len: expected a positive integer, got number 0");
  }
  SUBCASE("seq_len fractional")
  {
    model["seq_len"] = 1.5;
    CHECK(error_of(model) == "model.json: seq_len: expected an integer, got number 1.5");
  }
  SUBCASE("seq_len missing")
  {
    model.erase("seq_len");
    CHECK(error_of(model) == "model.json: (top level): missing required field 'seq_len'");
  }
  SUBCASE("all-reduce count negative")
  {
    model["layers"][1]["tensor_parallel_all_reduces"] = -1;
    CHECK(error_of(model) == "model.json: layers[1].tensor_parallel_all_reduces: expected a non-negative integer, got number -1");
  }
  SUBCASE("duplicate layer names")
  {
    model["layers"][2]["name"] = "a";
    CHECK(error_of(model) == "model.json: layers[2].name: expected a unique layer name, got \"a\" again (first in layers[1])");
  }
}
