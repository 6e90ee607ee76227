#pragma once

namespace tau::cli {

// tau top [--once] [--interval SECONDS]: queues with their usage, running
// jobs with progress and ETA, GPUs with health and utilisation, redrawn
// until Ctrl-C (--once: drawn once, for scripts).
int RunTop(bool once, double interval_seconds);

}  // namespace tau::cli
