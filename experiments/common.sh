# What the shell experiments share (source it): the hetsim program and the experiment programs beside it, the
# output folder, and the figures written into docs/experiments.md.
#   experiment_setup NAME "$@"   sets $hetsim ($HETSIM, or build/cli/hetsim), $bin (its folder) and $out
#                                (--out DIR, default out/NAME), creating $out; --no-figures sets $figures to 0
#                                (else 1); any other argument is an error.
#   write_figures NAME [NOTE]    unless --no-figures, replaces NAME's figures block in docs/experiments.md with
#                                the figures of $out (experiments/figures.py NAME reads them), the time since
#                                experiment_setup and this run's command; NOTE (e.g. "2 MPI ranks") joins the
#                                machine's description. Exits 1 when the page has no block for NAME.
experiment_setup() {
  local name=$1
  shift
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  hetsim="${HETSIM:-$root/build/cli/hetsim}"
  [ -x "$hetsim" ] || { echo "$name: no hetsim program at $hetsim (build it, or set HETSIM=)" >&2; exit 2; }
  bin="$(cd "$(dirname "$hetsim")" && pwd)"
  out="$root/out/$name"
  figures=1
  experiment_command=("$0" "$@")
  experiment_load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || true)
  SECONDS=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --out) [ $# -ge 2 ] || { echo "$name: --out needs a folder" >&2; exit 2; }; out=$2; shift 2 ;;
      --out=*) out=${1#--out=}; shift ;;
      --no-figures) figures=0; shift ;;
      *) echo "$name: unknown argument '$1' (usage: run.sh [--out DIR] [--no-figures])" >&2; exit 2 ;;
    esac
  done
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
}

write_figures() {
  [ "$figures" = 1 ] || return 0
  python3 "$root/experiments/figures.py" "$1" "$out" --seconds "$SECONDS" --load "${experiment_load:-}" \
    --note "${2:-}" -- "${experiment_command[@]}"
}
