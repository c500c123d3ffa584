# What the shell experiments share (source it): the hetsim program and the experiment programs beside it, and
# the output folder.
#   experiment_setup NAME "$@"   sets $hetsim ($HETSIM, or build/cli/hetsim), $bin (its folder) and $out
#                                (--out DIR, default out/NAME), creating $out; any other argument is an error.
experiment_setup() {
  local name=$1
  shift
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  hetsim="${HETSIM:-$root/build/cli/hetsim}"
  [ -x "$hetsim" ] || { echo "$name: no hetsim program at $hetsim (build it, or set HETSIM=)" >&2; exit 2; }
  bin="$(cd "$(dirname "$hetsim")" && pwd)"
  out="$root/out/$name"
  while [ $# -gt 0 ]; do
    case "$1" in
      --out) [ $# -ge 2 ] || { echo "$name: --out needs a folder" >&2; exit 2; }; out=$2; shift 2 ;;
      --out=*) out=${1#--out=}; shift ;;
      *) echo "$name: unknown argument '$1' (usage: run.sh [--out DIR])" >&2; exit 2 ;;
    esac
  done
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
}
