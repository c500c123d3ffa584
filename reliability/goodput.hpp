#pragma once
/// Useful work under failures. A job saves a checkpoint after every `interval` of work, which stops it for the
/// checkpoint's blocking time; failures arrive as a Poisson process with the job's mean time between failures
/// (every component it needs: devices, nodes, links); each costs a restart (detection, rescheduling, loading the
/// last checkpoint) and the work done since that checkpoint.
///
/// The expected wall time of one interval is Daly's (J. T. Daly, "A higher order estimate of the optimum
/// checkpoint interval for restart dumps", FGCS 22, 2006, eq. 13), failures during checkpoints and restarts
/// included:  M e^{R/M} (e^{(tau + delta)/M} - 1). Young's interval sqrt(2 delta M) (J. W. Young, CACM 17, 1974)
/// is its first-order optimum; the interval HetSim chooses maximises the exact expression over whole iterations.

namespace hetsim::reliability {

struct CheckpointCosts {
  double blocking_s = 0; ///< delta: how long a checkpoint stops training
  double restart_s  = 0; ///< R: from a failure to training again from the last checkpoint
  double mtbf_s     = 0; ///< M: the job's mean time between failures; infinity when nothing fails
  double min_interval_s = 0; ///< an asynchronous checkpoint's write to storage, which the next must not overtake
};

/// Young's interval, sqrt(2 delta M).
double young_interval_s(const CheckpointCosts& costs);
/// Daly's higher-order estimate (2006, eq. 37): sqrt(2 delta M)(1 + sqrt(delta / 2M) / 3 + delta / 18M) - delta
/// for delta < 2M, else M.
double daly_interval_s(const CheckpointCosts& costs);
/// Expected wall time to finish `work_s` of training and its checkpoint (Daly 2006, eq. 13).
double expected_interval_wall_s(double work_s, const CheckpointCosts& costs);
/// work_s over its expected wall time: the fraction of wall time whose work is kept.
double useful_fraction(double work_s, const CheckpointCosts& costs);

struct Goodput {
  int interval_iterations   = 0; ///< iterations between checkpoints, the best whole number
  double interval_s         = 0; ///< their training time
  double useful_fraction    = 0; ///< at that interval
  double tokens_per_s       = 0; ///< tokens per second of training, times the useful fraction
  double young_interval_s   = 0; ///< for comparison: Young's interval ...
  double young_fraction     = 0; ///< ... and the useful fraction it gives (rounded to whole iterations)
  double expected_failures  = 0; ///< over the run: its wall time over the job's MTBF
};

/// The best checkpoint interval for a job whose iteration takes `iteration_s` and trains `tokens_per_iteration`,
/// and what it keeps over a run of `run_s` wall seconds.
Goodput best_goodput(double iteration_s, double tokens_per_iteration, const CheckpointCosts& costs, double run_s);

} // namespace hetsim::reliability
