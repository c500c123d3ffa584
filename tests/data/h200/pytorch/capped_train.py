"""real_train.py on a GPU larger than the H100: the caching allocator capped at the H100's 79.18 GiB, so that a
case runs out of memory where it would on the H100."""
import sys, torch
total = torch.cuda.get_device_properties(0).total_memory
if total > 81559 * 2**20:
    torch.cuda.set_per_process_memory_fraction(79.18 * 2**30 / total)
import real_train
real_train.main()
