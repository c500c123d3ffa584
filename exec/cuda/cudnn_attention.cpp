#include "exec/cuda/cudnn_attention.hpp"

#include <cudnn_frontend.h>

#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace hetsim::exec {
namespace {

namespace fe = cudnn_frontend;

// Tensor ids of the variant pack, in AttentionTensors' memory order.
enum Uid : int64_t { q = 1, k, v, o, d_o, d_q, d_k, d_v, stats };

void check_cudnn(cudnnStatus_t status, const char* what)
{
  if (status != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + cudnnGetErrorString(status));
}

/// The shape PyTorch's attention hands cuDNN: heads x sequence x head size, laid out sequence-major with the
/// heads of one position side by side (the projections' output viewed per head, never copied).
struct Layout {
  std::vector<int64_t> dims, strides;
};

Layout per_head(const AttentionTensors& t)
{
  return {{1, t.heads, t.sequence, t.head_size}, {t.heads * t.sequence * t.head_size, t.head_size, t.heads * t.head_size, 1}};
}

std::shared_ptr<fe::graph::Tensor_attributes> input(fe::graph::Graph& graph, const char* name, Uid uid,
                                                    const AttentionTensors& t)
{
  const Layout layout = per_head(t);
  return graph.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(layout.dims).set_stride(layout.strides));
}

void output(const std::shared_ptr<fe::graph::Tensor_attributes>& tensor, Uid uid, const AttentionTensors& t)
{
  const Layout layout = per_head(t);
  tensor->set_output(true).set_uid(uid).set_dim(layout.dims).set_stride(layout.strides);
}

/// The fp32 log-sum-exp per head and query the forward writes and the backward reads.
std::vector<int64_t> stats_dims(const AttentionTensors& t)
{
  return {1, t.heads, t.sequence, 1};
}
std::vector<int64_t> stats_strides(const AttentionTensors& t)
{
  return {t.heads * t.sequence, t.sequence, 1, 1};
}

/// Causal, as every decoder HetSim models trains; the scale is 1 / sqrt(head size), SDPA's default.
template <class Attributes> Attributes causal(Attributes attributes, const AttentionTensors& t)
{
  attributes.set_attn_scale(1.0f / std::sqrt(static_cast<float>(t.head_size)))
      .set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
      .set_diagonal_band_right_bound(0);
  return attributes;
}

std::shared_ptr<fe::graph::Graph> new_graph(bool bf16)
{
  auto graph = std::make_shared<fe::graph::Graph>();
  graph->set_io_data_type(bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return graph;
}

std::shared_ptr<fe::graph::Graph> forward_graph(const AttentionTensors& t, bool bf16)
{
  auto graph = new_graph(bf16);
  auto Q = input(*graph, "Q", Uid::q, t), K = input(*graph, "K", Uid::k, t), V = input(*graph, "V", Uid::v, t);
  auto [O, Stats] =
      graph->sdpa(Q, K, V, causal(fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(true), t));
  output(O, Uid::o, t);
  Stats->set_output(true).set_uid(Uid::stats).set_data_type(fe::DataType_t::FLOAT).set_dim(stats_dims(t)).set_stride(stats_strides(t));
  return graph;
}

std::shared_ptr<fe::graph::Graph> backward_graph(const AttentionTensors& t, bool bf16)
{
  auto graph = new_graph(bf16);
  auto Q = input(*graph, "Q", Uid::q, t), K = input(*graph, "K", Uid::k, t), V = input(*graph, "V", Uid::v, t);
  auto O = input(*graph, "O", Uid::o, t), dO = input(*graph, "dO", Uid::d_o, t);
  auto Stats = graph->tensor(fe::graph::Tensor_attributes()
                                 .set_name("Stats")
                                 .set_uid(Uid::stats)
                                 .set_dim(stats_dims(t))
                                 .set_stride(stats_strides(t))
                                 .set_data_type(fe::DataType_t::FLOAT));
  auto [dQ, dK, dV] = graph->sdpa_backward(
      Q, K, V, O, dO, Stats, causal(fe::graph::SDPA_backward_attributes().set_name("sdpa_backward"), t));
  output(dQ, Uid::d_q, t);
  output(dK, Uid::d_k, t);
  output(dV, Uid::d_v, t);
  return graph;
}

} // namespace

struct CudnnAttention::Graphs {
  cudnnHandle_t handle = nullptr;
  std::map<Key, std::shared_ptr<fe::graph::Graph>> built;
  std::map<Key, std::string> unsupported;
};

CudnnAttention::CudnnAttention(bool bf16) : bf16_(bf16), graphs_(std::make_unique<Graphs>())
{
  check_cudnn(cudnnCreate(&graphs_->handle), "cudnnCreate");
}

CudnnAttention::~CudnnAttention()
{
  if (graphs_->handle)
    cudnnDestroy(graphs_->handle);
}

bool CudnnAttention::build(const AttentionTensors& tensors, std::string& why)
{
  const Key id = key(tensors);
  if (graphs_->built.count(id))
    return true;
  if (auto refused = graphs_->unsupported.find(id); refused != graphs_->unsupported.end()) {
    why = refused->second;
    return false;
  }
  auto graph = tensors.backward ? backward_graph(tensors, bf16_) : forward_graph(tensors, bf16_);
  auto status = graph->build(graphs_->handle, {fe::HeurMode_t::A});
  if (status.is_bad()) {
    why = graphs_->unsupported[id] = status.get_message();
    return false;
  }
  graphs_->built[id] = std::move(graph);
  return true;
}

std::size_t CudnnAttention::workspace_bytes(const AttentionTensors& tensors)
{
  int64_t bytes = 0;
  auto status   = graphs_->built.at(key(tensors))->get_workspace_size(bytes);
  if (status.is_bad())
    throw std::runtime_error("cuDNN attention workspace: " + status.get_message());
  return static_cast<std::size_t>(bytes);
}

void CudnnAttention::run(const AttentionTensors& tensors, cudaStream_t stream, void* memory)
{
  check_cudnn(cudnnSetStream(graphs_->handle, stream), "cudnnSetStream");
  auto* base                = static_cast<char*>(memory);
  const std::size_t tensor  = tensors.tensor() * 2; // bytes of one 16-bit tensor
  const int count           = tensors.backward ? 8 : 4;
  std::unordered_map<int64_t, void*> pack;
  const Uid order[] = {Uid::q, Uid::k, Uid::v, Uid::o, Uid::d_o, Uid::d_q, Uid::d_k, Uid::d_v};
  for (int i = 0; i < count; ++i)
    pack[order[i]] = base + i * tensor;
  char* stats     = base + count * tensor;
  pack[Uid::stats] = stats;
  char* workspace = stats + tensors.rows() * 2;
  auto status     = graphs_->built.at(key(tensors))->execute(graphs_->handle, pack, workspace);
  if (status.is_bad())
    throw std::runtime_error("cuDNN attention: " + status.get_message());
}

} // namespace hetsim::exec
