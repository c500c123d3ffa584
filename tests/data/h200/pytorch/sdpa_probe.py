"""PyTorch's cuDNN SDPA forward and backward, causal, bf16, timed by CUDA events: grouped-query heads or not,
batch folded into heads or not, at the shared Llama shapes."""
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
def timed(fn, n=20):
    for _ in range(3): fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize(); s.record()
    for _ in range(n): fn()
    e.record(); torch.cuda.synchronize(); return s.elapsed_time(e) / n * 1e3
for b, h, hk, s, d in [(2,32,8,2048,64),(2,32,32,2048,64),(1,64,64,2048,64),(2,32,8,4096,128),(2,32,32,4096,128),(1,64,64,4096,128),(16,16,16,1024,64)]:
    q = torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    k = torch.randn(b, s, hk, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    v = torch.randn(b, s, hk, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        gqa = hk != h
        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
        o = fwd(); g = torch.randn_like(o)
        tf = timed(fwd)
        tb = timed(lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True))
    fl = 4 * b * h * s * s * d / 2
    print(f"b{b} h{h} kv{hk} s{s} d{d}: fwd {tf:7.1f} us ({fl/tf/1e6:5.0f} TFLOP/s causal) bwd {tb:7.1f} us ({2.5*fl/tb/1e6:5.0f})", flush=True)
