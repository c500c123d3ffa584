#pragma once
/// The disk a run writes outside its processes' memory: the rendezvous store its ranks meet in and the traces
/// they leave. Both are sized from the schedule and checked against their directories' free space before any
/// rank starts, so that a full disk is named up front instead of surfacing as a rank's rendezvous failure.

#include "exec/executor.hpp"

#include <cstdint>
#include <string>

namespace hetsim::exec {

/// Bytes the ranks write into the rendezvous directory, an upper bound for either executor: a file per member
/// of every Gloo context (the cpu executor's world and two point-to-point contexts, one per collective group and
/// stream), each holding a gloo::transport::tcp::Address (a sockaddr_storage and a sequence number, 136 bytes)
/// per member; the liveness files of each rank; NCCL's unique id. Every file counts a whole 4 KiB block.
std::uintmax_t rendezvous_bytes(const strategies::Schedule& schedule);

/// Bytes of the traces a run writes into its trace directory: each rank's, the merged one (as large as all of
/// them) and the report. An event is written in about 200 bytes (a 4-rank run of tests/exec/data); 512 are
/// counted for each task's slice, memory sample and flow arrow and, with `workload.time_kernels`, each kernel.
std::uintmax_t trace_bytes(const Workload& workload);

/// Throws InputError, one line naming `what` and `dir`, when the file system holding `dir` has less than `bytes`
/// available, or when a block cannot be written there (a quota, a full file system that still reports space).
void require_free_space(const std::string& dir, std::uintmax_t bytes, const std::string& what);

} // namespace hetsim::exec
