#!/bin/bash
# The H200 measurements in one script: the 22 shared plans on the cuda executor (cuDNN attention, eager host
# dispatch), its profile, and PyTorch on the same GPU. Each phase is skipped once its time budget is spent.
# Run from the folder holding .device/ (README.md); results go to $OUT (default /tmp/out).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
D=$PWD/.device
W=/tmp/w; mkdir -p $W/exec $W/pytorch
exec > >(tee $OUT/log.txt) 2>&1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
NV=$(python3 -c "import nvidia,sys; print(list(nvidia.__path__)[0])")
PIPLIBS=$(find $NV -name "lib*.so*" -printf '%h\n' | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH=$D/lib:/usr/local/cuda/lib64:$PIPLIBS${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
python3 -c "import torch,transformers;print('torch',torch.__version__,'cuda',torch.version.cuda,'cudnn',torch.backends.cudnn.version(),'nccl',torch.cuda.nccl.version(),'transformers',transformers.__version__)"
ldd $D/bin/hetsim $D/bin/libhetsim_exec_cuda.so | grep -E "not found|cudnn|cublas.so|nccl|nvrtc|cudart" | sort -u
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
H=$D/bin/hetsim; I=$D/inputs
model_of() { case $1 in gpt2*) echo gpt2-medium.json;; llama-3.2*) echo llama-3.2-1b.json;; *) echo llama-3-8b-8l.json;; esac; }
run_plan() { # tag extra-args...
  local tag=$1; shift; local dir=$W/exec/run-$tag; mkdir -p $dir
  ( cd $dir && timeout 90 $H run --cluster $I/h100x1.json --model $I/$(model_of $tag) --plan $I/plan-$tag.json \
      --executor cuda --warmup 2 --iterations 5 --trace-kernels --trace-dir . "$@" > stdout.txt 2>&1 )
  echo "[$(el) s] run $tag $*: $(grep -E 'iteration time|failed|error' $dir/stdout.txt | head -2 | tr -s ' ' | tr '\n' ' ')"
}
echo "== executor, device only, with cuDNN's frontend log"
run_plan gpt2-medium-mb1
mv $W/exec/run-gpt2-medium-mb1 $W/exec/device-gpt2-medium-mb1
run_plan gpt2-medium-mb16; mv $W/exec/run-gpt2-medium-mb16 $W/exec/device-gpt2-medium-mb16
echo "== executor, eager host dispatch"
for tag in gpt2-medium-mb1 gpt2-medium-mb2 gpt2-medium-mb4 gpt2-medium-mb8 gpt2-medium-mb16 gpt2-medium-mb32 \
           gpt2-medium-mb64 gpt2-medium-mb32-rc gpt2-medium-mb64-rc llama-3.2-1b-mb1 llama-3.2-1b-mb2 llama-3.2-1b-mb4 \
           llama-3.2-1b-mb8 llama-3.2-1b-mb16 llama-3.2-1b-mb16-rc llama-3.2-1b-mb32-rc llama-3-8b-8l-mb1 \
           llama-3-8b-8l-mb2 llama-3-8b-8l-mb4 llama-3-8b-8l-mb4-rc llama-3-8b-8l-mb8 llama-3-8b-8l-mb8-rc; do
  [ $(el) -gt 240 ] && { echo "skipped $tag (time)"; continue; }
  run_plan $tag --host-dispatch eager
done
echo "== profile"
for m in gpt2-medium llama-3.2-1b; do
  [ $(el) -gt 280 ] && { echo "skipped profile $m (time)"; continue; }
  ( cd $W/exec && timeout 60 $H profile --cluster $I/h100x1.json --model $I/$m.json --executor cuda --zero-stage 0 \
      --dtype bf16 --framework fsdp --autocast --out profile-$m.json > profile-$m.txt 2>&1 ); echo "[$(el) s] profile $m"; cat $W/exec/profile-$m.txt
done
echo "== PyTorch on the same GPU"
python3 $D/pytorch/cases.py "$GPU" $I $W/pytorch/cases.json
[ $(el) -lt 330 ] && timeout $(( 410 - $(el) )) python3 $D/pytorch/capped_train.py $W/pytorch/cases.json $W/pytorch/steps.json
echo "[$(el) s] pytorch done"
echo "[$(el) s] all done"
tar -C $W -czf $OUT/results.tar.gz exec pytorch
ls -la $OUT
