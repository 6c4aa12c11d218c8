// Timing the way a deployment runs: the calls captured into a CUDA graph, the graph replayed,
// CUDA events around each replay, warm-up first, median and spread of the replays. The caller
// rotates its inputs (launch(i) uses rotation i % sets) so the working set exceeds L2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "tgemm/tensor.h"

namespace tgemm {

struct TimingOptions {
  int launches_per_graph = 20;  // calls captured in one graph (cycle through the rotations)
  int warmup_replays = 3;
  int replays = 15;             // timed replays; the statistics are over these
  // Diagnostics of time_graphs_interleaved (at M = 8192 the second of two identical graphs can
  // measure 3-5% slower, in both round orders). shared_stream: every graph is captured
  // and replayed on one stream instead of a private stream each; recapture: the graphs are
  // captured anew (new streams) every round, in the order that round replays them.
  bool shared_stream = false;
  bool recapture = false;
  // time_graphs_interleaved: rounds run first, in the same alternating order, and discarded, so
  // the timed rounds start from the GPU's sustained state (on dense M = 8192 problems the second
  // of two identical graphs runs 3-5% slower over the first ~10 rounds, then both converge).
  int settle_rounds = 0;
  // time_graphs_interleaved: the order of the graphs in each round. false: reversed on odd rounds
  // (ABBA...); true: a fresh pseudo-random permutation each round (fixed seed), so no graph keeps
  // a phase against a periodic clock or power controller.
  bool shuffle_order = false;
};

struct TimingStats {
  double median_us = 0;  // per call
  double p10_us = 0;
  double p90_us = 0;
  double min_us = 0;
  int samples = 0;
};

// Captures launch(0..launches_per_graph-1) on a private stream into a graph and times replays.
// launch must not allocate or synchronise (warm it up on that shape before). Throws tgemm::Error
// on CUDA failures, including an illegal launch inside capture.
TimingStats time_graph(const std::function<void(int, Stream)>& launch, const TimingOptions& options);

// Several launchers timed in interleaved rounds: each is captured once, then every round replays
// each graph (warm-up, then `replays` timed replays), the order reversed on odd rounds. Power and
// clock drift on a GPU under sustained load (seconds of dense GEMMs lower the clocks) then hits
// all of them alike instead of favouring whichever ran first. Statistics are over all rounds;
// round_medians, when given, receives each launcher's median per call in each round
// ([launcher][round], for paired_ratio in tuner/select.h).
std::vector<TimingStats> time_graphs_interleaved(const std::vector<std::function<void(int, Stream)>>& launches,
                                                 const TimingOptions& options, int rounds,
                                                 std::vector<std::vector<double>>* round_medians = nullptr);

// Number of input rotations so that the inputs of the rotations together exceed `factor` times
// the L2 size, and at least min_sets, capped at max_sets and at what fits in `memory_budget` bytes.
int rotation_count(std::size_t bytes_per_set, std::size_t l2_bytes, double factor, int max_sets,
                   std::size_t memory_budget, int min_sets = 1);

// Streaming read of [data, data + bytes) with 16-byte loads; `blocks` x `threads` grid.
void stream_read(const void* data, std::size_t bytes, int blocks, int threads, void* sink, Stream stream);

// Device-to-device copy bandwidth (bytes read + written per second, TB/s) over `bytes`, by a copy
// kernel with 16-byte accesses (graph-replayed).
double measure_copy_tbps(std::size_t bytes);

}  // namespace tgemm
