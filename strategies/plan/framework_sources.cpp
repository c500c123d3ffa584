#include "strategies/plan/framework_sources.hpp"

#include <array>

namespace hetsim::strategies {
namespace {

constexpr Framework M = Framework::megatron;
constexpr Framework D = Framework::deepspeed;
constexpr Framework F = Framework::fsdp;
constexpr Framework MD = Framework::megatron_deepspeed;

// The framework-independent memory terms, measured or documented once for all four.
#define HETSIM_ALL_FRAMEWORKS(setting, release, file, line, excerpt, reading)                                  \
  SettingSource{setting, M, release, file, line, excerpt, reading},                                            \
      SettingSource{setting, D, release, file, line, excerpt, reading},                                        \
      SettingSource{setting, F, release, file, line, excerpt, reading},                                        \
      SettingSource{setting, MD, release, file, line, excerpt, reading}

constexpr auto kSources = std::to_array<SettingSource>({
    // fp32_gradient_reduction
    {"fp32_gradient_reduction", M, kMegatronRelease, "megatron/training/arguments.py", 686,
     "args.accumulate_allreduce_grads_in_fp32 = True",
     "only with --bf16 (l.674), unless --grad-reduce-in-bf16: fp32 main gradients, accumulated and reduced"},
    {"fp32_gradient_reduction", D, kDeepSpeedRelease, "deepspeed/runtime/constants.py", 268,
     "COMMUNICATION_DATA_TYPE_DEFAULT = None",
     "None resolves to the model's dtype (engine.py:992-1004): gradients are reduced in the dtype"},
    {"fp32_gradient_reduction", F, kMeasured, "tests/data/h100/README.md", 8, "bf16 `torch.autocast`",
     "under autocast the gradients are the fp32 weights' own, reduced as they are"},
    {"fp32_gradient_reduction", MD, kDeepSpeedRelease, "deepspeed/runtime/constants.py", 268,
     "COMMUNICATION_DATA_TYPE_DEFAULT = None",
     "DeepSpeed's engine reduces (Megatron's optimizer comes back unwrapped under --deepspeed, "
     "megatron/optimizer/__init__.py:115-116 at Megatron-DeepSpeed 4efb479d): in the model's dtype"},
    // bucket_params
    {"bucket_params", M, kMegatronRelease, "megatron/core/distributed/distributed_data_parallel.py", 64,
     "40000000, 1000000 * parallel_state.get_data_parallel_world_size()",
     "40 M parameters (1 M per data-parallel rank beyond 40); HetSim's export writes it as --ddp-bucket-size"},
    {"bucket_params", D, kDeepSpeedRelease, "deepspeed/runtime/zero/config.py", 109,
     "reduce_bucket_size: int = Field(pp_int(5e8), ge=0)",
     "ZeRO-1/2 buckets; without ZeRO the engine's MEMORY_OPT_ALLREDUCE_SIZE, also 5e8 (engine.py:122)"},
    {"bucket_params", F, kPyTorchDdpRelease, "torch/nn/parallel/distributed.py", 359, "bucket_cap_mb=25,",
     "DDP's 25 MiB buckets, which FSDP's unsharded parts reduce with too"},
    {"bucket_params", MD, kDeepSpeedRelease, "deepspeed/runtime/zero/config.py", 109,
     "reduce_bucket_size: int = Field(pp_int(5e8), ge=0)", "DeepSpeed's engine's buckets, as under deepspeed"},
    // reduce_during_backward
    {"reduce_during_backward", M, kMegatronRelease, "megatron/training/arguments.py", 2295,
     "group.add_argument('--overlap-grad-reduce', action='store_true',",
     "off by Megatron-LM's default (l.2296); HetSim's export writes --overlap-grad-reduce, as its users run it"},
    {"reduce_during_backward", D, kDeepSpeedRelease, "deepspeed/runtime/zero/config.py", 353,
     "self.overlap_comm = self.stage == ZeroStageEnum.weights",
     "overlap_comm defaults true at ZeRO-3 only (HetSim's ZeRO-3 reduces each layer as it ends); without ZeRO the "
     "engine reduces after the backward pass (engine.py:2155)"},
    {"reduce_during_backward", F, kPyTorchDdpRelease, "torch/nn/parallel/distributed.py", 441,
     "self.bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)",
     "each bucket is reduced once autograd's hooks have filled it, during the backward (FSDP reduce-scatters in "
     "its post-backward hook)"},
    {"reduce_during_backward", MD, kDeepSpeedRelease, "deepspeed/runtime/zero/config.py", 353,
     "self.overlap_comm = self.stage == ZeroStageEnum.weights",
     "DeepSpeed's engine's default; its PipelineEngine reduces once every micro-batch is done (pipe/engine.py:81)"},
    // buckets_first_chunk_only
    {"buckets_first_chunk_only", M, kMegatronRelease, "megatron/core/distributed/distributed_data_parallel.py", 186,
     "if pp_rank > 0:",
     "one bucket (bucket_size None, l.187) on every pipeline rank after the first, and on every model chunk after "
     "the first (training.py l.1139, disable_bucketing=(model_chunk_idx > 0)); without --overlap-grad-reduce, one "
     "bucket everywhere (training.py l.1129-1130)"},
    {"buckets_first_chunk_only", D, kDeepSpeedRelease, "deepspeed/runtime/pipe/engine.py", 300,
     "self.allreduce_gradients(bucket_size=MEMORY_OPT_ALLREDUCE_SIZE)",
     "the pipeline engine reduces every stage's gradients in buckets once its micro-batches are done; the engine "
     "without a pipeline likewise"},
    {"buckets_first_chunk_only", F, kPyTorchDdpRelease, "torch/nn/parallel/distributed.py", 359, "bucket_cap_mb=25,",
     "DDP buckets every rank's gradients alike (FSDP runs no pipeline)"},
    {"buckets_first_chunk_only", MD, kDeepSpeedRelease, "deepspeed/runtime/pipe/engine.py", 300,
     "self.allreduce_gradients(bucket_size=MEMORY_OPT_ALLREDUCE_SIZE)",
     "DeepSpeed's pipeline engine, as under deepspeed"},
    // tied_embedding_all_reduce
    {"tied_embedding_all_reduce", M, kMegatronRelease, "megatron/core/distributed/finalize_model_grads.py", 119,
     "def _allreduce_word_embedding_grads(",
     "first and last stages all-reduce the shared embedding's main_grad after the data-parallel sync (l.145-153)"},
    {"tied_embedding_all_reduce", D, kDeepSpeedRelease, "deepspeed/runtime/pipe/schedule.py", 239,
     "cmds.append(ReduceTiedGrads())",
     "once per step after the last backward; each stage with a TiedLayerSpec builds its own copy (module.py:254-266)"},
    {"tied_embedding_all_reduce", F, kPyTorchFsdpRelease, "", 0, "",
     "FSDP does not pipeline: one copy of a tied weight, nothing to keep equal"},
    {"tied_embedding_all_reduce", MD, kMegatronDeepSpeedRelease, "megatron/model/gpt_model.py", 424,
     "TiedLayerSpec('embed',",
     "GPTModelPipe ties the head to the embedding (l.362) through DeepSpeed's TiedLayerSpec, whose gradients "
     "its PipelineEngine all-reduces once per step (deepspeed/runtime/pipe/schedule.py:239)"},
    // scatter_gather_sends
    {"scatter_gather_sends", M, kMegatronRelease, "megatron/core/pipeline_parallel/schedules.py", 1655,
     "seq_length = seq_length // parallel_state.get_tensor_model_parallel_world_size()",
     "a rank sends 1/tp of the boundary only with sequence parallelism (l.1654), which is off by Megatron-LM's "
     "default (arguments.py:1939) and which HetSim's export writes with tp > 1; a plan says "
     "\"sequence_parallel\": false for the whole boundary"},
    {"scatter_gather_sends", D, kDeepSpeedRelease, "deepspeed/runtime/pipe/engine.py", 1031,
     "outputs[-1] = outputs[-1].half()",
     "no sequence parallelism: the tuple's tail goes whole, the GPT models' attention mask cast to fp16"},
    {"scatter_gather_sends", F, kPyTorchFsdpRelease, "", 0, "", "FSDP does not pipeline: no sends"},
    {"scatter_gather_sends", MD, kMegatronDeepSpeedRelease, "megatron/arguments.py", 972,
     "group.add_argument('--sequence-parallel', action='store_true',",
     "off by default: each stage sends its whole boundary, which DeepSpeed's pipe_partitioned splits over tp"},
    // sends_attention_mask
    {"sends_attention_mask", M, kMegatronRelease, "megatron/core/pipeline_parallel/schedules.py", 1663,
     "tensor_shapes.append((seq_length, micro_batch_size, config.hidden_size))",
     "one (s, b, h) tensor per send: each stage makes its own mask"},
    {"sends_attention_mask", D, kDeepSpeedRelease, "deepspeed/runtime/pipe/engine.py", 1031,
     "outputs[-1] = outputs[-1].half()",
     "the GPT models on DeepSpeed pass their mask along the pipeline as the tuple's tail, cast to fp16"},
    {"sends_attention_mask", F, kPyTorchFsdpRelease, "", 0, "", "FSDP does not pipeline: no sends"},
    {"sends_attention_mask", MD, kMegatronDeepSpeedRelease, "pretrain_gpt.py", 76,
     "args.attn_mask = attention_mask.to(torch.bool)",
     "GPTModelPipe's mask is made once and cached; EmbeddingPipe then sends the embeddings alone "
     "(megatron/model/language_model.py:355-356)"},
    // partitioned_sends
    {"partitioned_sends", M, kMegatronRelease, "megatron/core/pipeline_parallel/schedules.py", 1663,
     "tensor_shapes.append((seq_length, micro_batch_size, config.hidden_size))",
     "the whole (s, b, h) tensor from every rank unless sequence parallelism divides s"},
    {"partitioned_sends", D, kDeepSpeedRelease, "deepspeed/runtime/pipe/engine.py", 144,
     "self.is_pipe_partitioned = self.is_model_parallel and self._config.pipeline['pipe_partitioned']",
     "with tp > 1 only; pipe_partitioned and grad_partitioned default true (config.py:408-409): 1/tp of the "
     "activation and of its gradient per rank (l.755-760, l.1074-1076), all-gathered by the receiver"},
    {"partitioned_sends", F, kPyTorchFsdpRelease, "", 0, "", "FSDP does not pipeline: no sends"},
    {"partitioned_sends", MD, kDeepSpeedRelease, "deepspeed/runtime/pipe/engine.py", 144,
     "self.is_pipe_partitioned = self.is_model_parallel and self._config.pipeline['pipe_partitioned']",
     "with tp > 1, DeepSpeed's PipelineEngine over Megatron's tensor-parallel ranks: 1/tp of the activation and "
     "of its gradient per rank, all-gathered by the receiver"},
    // blocking_sends
    {"blocking_sends", M, kMegatronRelease, "megatron/core/pipeline_parallel/p2p_communication.py", 151,
     "reqs = torch.distributed.batch_isend_irecv(ops)",
     "batched isend/irecv (1F1B; interleaved schedules overlap them too, arguments.py:1132)"},
    {"blocking_sends", D, kDeepSpeedRelease, "deepspeed/runtime/pipe/p2p.py", 48,
     "assert async_op == False, \"Doesn't support async_op true\"",
     "torch.distributed.send on the engine's stream, between instructions"},
    {"blocking_sends", F, kPyTorchFsdpRelease, "", 0, "", "FSDP does not pipeline: no sends"},
    {"blocking_sends", MD, kDeepSpeedRelease, "deepspeed/runtime/pipe/p2p.py", 48,
     "assert async_op == False, \"Doesn't support async_op true\"",
     "with pp > 1 Megatron-DeepSpeed runs DeepSpeed's PipelineEngine (pretrain_gpt.py:51-52): its blocking sends"},
    // gather_per_tensor
    {"gather_per_tensor", M, kMegatronRelease, "megatron/core/distributed/custom_fsdp/param_and_grad_buffer.py",
     1066, "class ParamAndGradBuffer:", "Megatron FSDP gathers its parameters in buckets, not tensor by tensor"},
    {"gather_per_tensor", D, kDeepSpeedRelease, "deepspeed/runtime/zero/partitioned_param_coordinator.py", 317,
     "self.__all_gather_params(params_to_fetch, forward)",
     "one coalesced all-gather per module fetch (a leaf module's weight and bias together); one per tensor is "
     "its upper bound, exact for layers without biases"},
    {"gather_per_tensor", F, kPyTorchFsdpRelease, "torch/distributed/fsdp/_flat_param.py", 211,
     "It is comprised of one or more original parameters, which are flattened and",
     "one flat parameter per wrapped module, gathered in one call (this line at commit 01caf79)"},
    {"gather_per_tensor", MD, kDeepSpeedRelease, "deepspeed/runtime/zero/partitioned_param_coordinator.py", 317,
     "self.__all_gather_params(params_to_fetch, forward)", "DeepSpeed's ZeRO-3, as under deepspeed"},
    // prefetch_params
    {"prefetch_params", M, kMegatronRelease, "megatron/core/distributed/custom_fsdp/param_and_grad_buffer.py",
     1066, "class ParamAndGradBuffer:", "the next bucket's gather ahead of the compute: one layer"},
    {"prefetch_params", D, kDeepSpeedRelease, "deepspeed/runtime/zero/config.py", 208,
     "prefetch_bucket_size: int = Field(pp_int(5e7), ge=0, alias=\"stage3_prefetch_bucket_size\")",
     "gathers run at most 5e7 parameters ahead of the compute"},
    {"prefetch_params", F, kPyTorchFsdpRelease, "torch/distributed/fsdp/fully_sharded_data_parallel.py", 329,
     "backward_prefetch: Optional[BackwardPrefetch] = BackwardPrefetch.BACKWARD_PRE,",
     "the next block's all-gather is issued before the current block's backward: one layer ahead "
     "(limit_all_gathers, false at this commit, l.336, bounds the forward's in later releases)"},
    {"prefetch_params", MD, kDeepSpeedRelease, "deepspeed/runtime/zero/config.py", 208,
     "prefetch_bucket_size: int = Field(pp_int(5e7), ge=0, alias=\"stage3_prefetch_bucket_size\")",
     "DeepSpeed's ZeRO-3, as under deepspeed"},
    // persistence_threshold
    {"persistence_threshold", M, kMegatronRelease, "megatron/core/distributed/custom_fsdp/param_and_grad_buffer.py",
     1066, "class ParamAndGradBuffer:", "Megatron FSDP shards every parameter in its buckets: none stays whole"},
    {"persistence_threshold", D, kDeepSpeedEarlierRelease, "deepspeed/runtime/zero/config.py", 214,
     "param_persistence_threshold: int = Field(pp_int(1e5), ge=0, alias=\"stage3_param_persistence_threshold\")",
     "tensors under 1e5 elements (biases, norms) stay whole on every rank (partition_parameters.py marks them "
     "ds_persist); the same default at v0.3.15, stage3.py:605"},
    {"persistence_threshold", F, kPyTorchFsdpRelease, "torch/distributed/fsdp/_flat_param.py", 211,
     "It is comprised of one or more original parameters, which are flattened and",
     "every parameter of a wrapped module is in its flat parameter, sharded whatever its size"},
    {"persistence_threshold", MD, kDeepSpeedEarlierRelease, "deepspeed/runtime/zero/config.py", 214,
     "param_persistence_threshold: int = Field(pp_int(1e5), ge=0, alias=\"stage3_param_persistence_threshold\")",
     "DeepSpeed's ZeRO-3, as under deepspeed"},
    // max_reuse_distance
    {"max_reuse_distance", M, kMegatronRelease, "megatron/core/distributed/custom_fsdp/param_and_grad_buffer.py",
     1066, "class ParamAndGradBuffer:", "unset: Megatron FSDP gathers a bucket once for its recompute and backward"},
    {"max_reuse_distance", D, kDeepSpeedEarlierRelease, "deepspeed/runtime/zero/config.py", 237,
     "max_reuse_distance: int = Field(pp_int(1e9), ge=0, alias=\"stage3_max_reuse_distance\")",
     "a tensor is released after its recompute unless fewer than 1e9 elements are used before its backward "
     "(partitioned_param_coordinator.py, __params_to_release); the same default at v0.3.15 (zero/constants.py:101)"},
    {"max_reuse_distance", F, kPyTorchFsdpRelease, "torch/distributed/fsdp/fully_sharded_data_parallel.py", 329,
     "backward_prefetch: Optional[BackwardPrefetch] = BackwardPrefetch.BACKWARD_PRE,",
     "unset: a block's backward pre-hook gathers it once, for its recompute and its backward"},
    {"max_reuse_distance", MD, kDeepSpeedEarlierRelease, "deepspeed/runtime/zero/config.py", 237,
     "max_reuse_distance: int = Field(pp_int(1e9), ge=0, alias=\"stage3_max_reuse_distance\")",
     "DeepSpeed's ZeRO-3, as under deepspeed"},
    // selective
    {"selective", M, kMegatronRelease, "megatron/core/transformer/transformer_config.py", 814,
     "self.recompute_modules = [\"core_attn\"]",
     "--recompute-granularity selective reruns the core attention: non-fused attention's s x s operators"},
    {"selective", D, kDeepSpeedEarlierRelease, "deepspeed/runtime/activation_checkpointing/checkpointing.py", 948,
     "def checkpoint(function, *args):",
     "DeepSpeed checkpoints whole functions; a selective plan is Megatron's core attention, what the models "
     "handed to it (Megatron-DeepSpeed's) rerun"},
    {"selective", F, kTorchtitanRelease, "torchtitan/parallelisms/parallelize_llama.py", 258,
     "func == torch.ops.aten.mm.default and meta[mm_count_key] % 2 == 0",
     "torchtitan's op-level policy, FSDP2's selective checkpointing (its Llama 3 configs' selective_ac_option = "
     "'op'): the outputs of every odd-numbered mm and of SDPA kept, everything else rerun"},
    {"selective", MD, kMegatronRelease, "megatron/core/transformer/transformer_config.py", 814,
     "self.recompute_modules = [\"core_attn\"]", "Megatron-LM's model code: its core attention rerun"},
    // eager_modules
    {"eager_modules", M, kMegatronRelease, "megatron/core/fusions/fused_bias_gelu.py", 17,
     "def bias_gelu(bias, y):",
     "Megatron-LM's own fused modules, and its vocabulary padded (--make-vocab-size-divisible-by 128, "
     "arguments.py:1427)"},
    {"eager_modules", D, kDeepSpeedRelease, "deepspeed/runtime/engine.py", 1280, "self.module.bfloat16()",
     "the engine runs the user's module as it is, most often a Hugging Face model, op by op; a "
     "Megatron-DeepSpeed run is framework megatron-deepspeed"},
    {"eager_modules", F, kMeasured, "tests/data/h100/README.md", 6,
     "trains Hugging Face models as a PyTorch user does", "Hugging Face's modules in eager PyTorch"},
    {"eager_modules", MD, kMegatronDeepSpeedRelease, "megatron/arguments.py", 644,
     "group.add_argument('--make-vocab-size-divisible-by', type=int, default=128,",
     "Megatron-LM's model code with its fused kernels, the vocabulary padded to a multiple of 128 x tp "
     "(megatron/tokenizer/tokenizer.py:63-64)"},
    // autocast
    {"autocast", M, kMegatronRelease, "megatron/core/transformer/module.py", 221,
     "self.add_module('module', module.bfloat16())", "Float16Module casts the model itself to 16-bit"},
    {"autocast", D, kDeepSpeedRelease, "deepspeed/runtime/engine.py", 1280, "self.module.bfloat16()",
     "the bf16 and fp16 engines cast the model itself"},
    {"autocast", F, kPyTorchFsdpRelease, "torch/distributed/fsdp/api.py", 116,
     "param_dtype (Optional[torch.dtype]): This specifies the dtype for model",
     "FSDP's MixedPrecision gathers 16-bit weights from fp32 shards, and autocast has nothing to cast: what "
     "Accelerate (FullyShardedDataParallelPlugin.set_mixed_precision), Lightning, llm-foundry and torchtitan set "
     "for bf16 (this line at commit acd8c9e). A plain PyTorch loop under torch.autocast, as the shared H100 steps "
     "were measured (tests/data/h100/README.md), says \"autocast\": true"},
    {"autocast", MD, kDeepSpeedRelease, "deepspeed/runtime/engine.py", 1280, "self.module.bfloat16()",
     "DeepSpeed's bf16 and fp16 engines cast Megatron's model itself"},
    // fp32_gradient_accumulation
    {"fp32_gradient_accumulation", M, kMegatronRelease, "megatron/training/arguments.py", 686,
     "args.accumulate_allreduce_grads_in_fp32 = True",
     "not a field here: Megatron-LM's fp32 main gradients are fp32_gradient_reduction"},
    {"fp32_gradient_accumulation", D, kDeepSpeedRelease, "deepspeed/runtime/engine.py", 1073,
     "grad_accum_dtype = torch.float32",
     "with bf16 and ZeRO off (l.1072), unless data_types.grad_accum_dtype says otherwise: the BF16_Optimizer, "
     "its full fp32 gradient copy (bf16_optimizer.py:165) and per-micro-batch accumulation (l.343)"},
    {"fp32_gradient_accumulation", F, kMeasured, "tests/data/h100/README.md", 8, "bf16 `torch.autocast`",
     "not a field here: under autocast the gradients are the fp32 weights' own"},
    {"fp32_gradient_accumulation", MD, kDeepSpeedRelease, "deepspeed/runtime/engine.py", 1073,
     "grad_accum_dtype = torch.float32",
     "DeepSpeed's engine picks its BF16_Optimizer as under deepspeed (with bf16 and ZeRO off, l.1072)"},
    // The memory terms every framework holds.
    HETSIM_ALL_FRAMEWORKS("cuda_context_gib", kMeasured, "tests/data/h100/README.md", 14, "(about 0.5 GiB)",
                          "a CUDA context with lazily loaded modules, measured on the H100"),
    HETSIM_ALL_FRAMEWORKS("communicator_buffer_mib", kMeasured, "", 0, "",
                          "not set: what NCCL v2.30.7-1 allocates for each communicator on the cluster "
                          "(costmodel/nccl_memory.hpp); given, that many MiB per communicator"),
    HETSIM_ALL_FRAMEWORKS("gemm_workspace_mib", kMeasured, "", 0, "",
                          "PyTorch's documented default cuBLAS workspace, CUBLAS_WORKSPACE_CONFIG :4096:8"),
    HETSIM_ALL_FRAMEWORKS("allocator_fragmentation", kMeasured, "tests/data/h100/pytorch/gpt2-medium-steps.json",
                          0, "", "an assumption, 10% of activations: the caching allocator reserved 2-5% above what it "
                                 "allocated on the shared H100 cases without checkpointing, 12-18% with it"),
});

#undef HETSIM_ALL_FRAMEWORKS

} // namespace

std::span<const SettingSource> framework_sources()
{
  return kSources;
}

} // namespace hetsim::strategies
