"""tests/data/h100/pytorch/real_train.py on a GPU larger than the H100: the caching allocator capped at the H100's
79.18 GiB, so that a case runs out of memory where it would on the H100. Usage: capped_train.py CASES.json OUT.json"""
import os, sys
import torch
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "..", "h100", "pytorch")]  # real_train.py beside it, or in tests/data
total = torch.cuda.get_device_properties(0).total_memory
if total > 81559 * 2**20:
    torch.cuda.set_per_process_memory_fraction(79.18 * 2**30 / total)
import real_train
real_train.main()
