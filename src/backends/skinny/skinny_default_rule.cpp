#include "backends/skinny/skinny_default_rule.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace tgemm::skinny {
namespace {

// --- Regions --------------------------------------------------------------------------------
// Each condition with its measured reason (H200, the suite's decode weights against cuBLASLt's
// default). The rule runs once per shape (the dispatcher caches the resolution).

// Weight-as-A, register batches (the model below picks tile and split): at M = 1 the model's pick
// beats cuBLASLt's default on every suite weight up to 80 MiB (0.84-0.98x, 56 MiB at 1.01x), but
// not reliably above 96 MiB (0.91-1.19x), where cuBLASLt is at 1.05-1.13x of the floor; at M = 16
// it loses on 8 of 16 (x re-read from L2 and 2x the MMA tiles: up to 1.38x). So M <= 8 and
// weights up to 96 MiB; the ring tiles (stages > 0) stay tuner candidates, the model was fitted
// on register batches.
constexpr std::int64_t kDefaultMaxM = 8;
constexpr double kDefaultMaxWeightBytes = 96.0 * (1 << 20);
// Under 1 MiB the whole read takes ~1 us at the small-read rate: launch latency dominates both
// libraries, nothing to win.
constexpr double kDefaultMinWeightBytes = 1 << 20;
// Under 256 (8 k-blocks per row) a warp's load batch is its whole job, and the output
// (M * N elements) becomes a sizeable share of the bytes: a tiled GEMM's coalesced epilogue wins.
constexpr std::int64_t kDefaultMinK = 256;
// Short rows, many of them (5120x2048 and 6144x1024 at M = 4 and 8): the model's pick (wk4_u8,
// one 16-row tile a CTA: 320-384 CTAs, more than a wave of short CTAs) ran at 0.93-0.98x of
// cuBLASLt's default and no skinny variant beat it by more than 1%; at 4096x1024 (256 CTAs) the
// pick won 1.03-1.08x. At M = 1 the same picks are 1.01-1.02x, so M = 1 keeps them.
constexpr std::int64_t kDefaultShortMaxK = 2048;
constexpr std::int64_t kDefaultShortMaxN = 4096;
// M = 2-8: the model's pick only where it is a 16-row tile. Over the M grid (H200, every M of 2-8
// on the suite's 16 weights, no rows) the 16-row picks ran at 1.01-1.21x of cuBLASLt's default on
// all five weights they were picked for; the 32-row picks at 0.90-0.92x on 1536x7168 and
// 0.94-0.96x on 8192x3584 (1.03-1.07x only on 1280x8192): a 32-row tile halves the CTAs, and
// the model, fitted at M = 1 and 16, over-credits it between.
constexpr int kDefaultMultiRowMaxBlockN = 16;
// M = 2-8 without split-K: only up to 4096 rows. Over the M grid on weights with no rows (H200,
// `tgemm bench --m-grid` on bench/shapes/unseen_shapes.csv) the 16-row unsplit picks ran at
// 1.15-1.20x of cuBLASLt's default at 3584x3584 and 4096x4096, but at 0.93-0.95x at 4608x3584,
// 0.97-1.00x at 5120x4096 and 0.99-1.05x at 6144x5120 (1.02-1.05x at 6144x4096).
constexpr std::int64_t kDefaultMultiRowUnsplitMaxN = 4096;

// M = 9-16, weight-as-B: the model above picks badly there (0.68-0.97x on 12 of 14 shapes: it
// takes 32-64-row tiles with u2 and split-K 8). One tile is at 1.07-1.27x of cuBLASLt's default
// on every K >= 4096 problem of 2-32 MiB, and on K >= 2048 with N <= 1024: 16 rows a CTA (two n8
// blocks), 4 warps splitting k, 4 k-steps a batch, one chunk a lane; it was 3.5-12% faster than
// the weight-as-A tile of the same shape at the same split on the suite's 576x7168, 1280x8192,
// 1536x7168 and 4096x4096. Outside that region (K <= 2560 with N >= 1536, >= 48 MiB) cuBLASLt's
// default was within 2% of the best, or the tile lost. Split-K is doubled while the doubled grid
// stays within 4 CTAs an SM, at most 4 (4096x4096 at split 2: 12.03 us against 12.65 at 1; the
// K-heavy three at split 4).
constexpr std::int64_t kM16DefaultMinM = 9;
constexpr std::int64_t kM16DefaultMaxM = 16;
constexpr double kM16DefaultMinWeightBytes = 2.0 * (1 << 20);
constexpr double kM16DefaultMaxWeightBytes = 32.0 * (1 << 20);
constexpr MmaWeightBTile kM16DefaultTile{2, 1, 4, 4};
constexpr std::int64_t kM16DefaultCtasPerSm = 4;
constexpr int kM16DefaultMaxSplit = 4;

// GEMV at M = 1 for short weights: rows N <= 1024, K >= 64, at least 64 KiB. At N = 576 its
// 8-warp, 2-chunk tile took 2.07 / 2.41 / 3.39 / 4.83 us at K = 64 / 512 / 2048 / 7168, where
// cuBLASLt's default took 2.75 / 3.68 / 6.89 / 7.10 us and the best weight-as-A tile 2.44 / 2.63
// / 3.71 / 5.92 us; the other GEMV tiles were 6-22% slower. At N = 1280-1536 it is within 4% of
// the weight-as-A pick; at N >= 4096 slower (a CTA's rows are one load batch there), so longer
// weights keep the model's pick. M = 2-4 are not measured.
constexpr std::int64_t kGemvDefaultMaxN = 1024;
constexpr std::int64_t kGemvDefaultMinK = 64;
constexpr double kGemvDefaultMinWeightBytes = 64 << 10;
constexpr GemvTile kGemvDefaultTile{1, 8, 2, false};

// --- Streaming-time model of the weight-as-A register-batch tiles ------------------------------
// Constants fitted on an H200 (every candidate's time at M = 1 and 16 over the 16 suite weights):
// the picked tile is 1.038x the best one in geomean over the 32 problems (1.111x with the first
// guesses).
constexpr double kHbmBytesPerUs = 4.3e6;  // large-copy rate, bytes per microsecond
// What one SM's warps can draw from HBM: ~1.5x its fair share of 4.3 TB/s over 132 SMs. Below
// one CTA per SM the unused SMs' share is lost.
constexpr double kSmBytesPerUs = 0.05e6;
// HBM latency near full bandwidth: a warp's load batch takes at least this long, and the bytes
// in flight over it bound the bandwidth (Little's law). Fitted: 1.6 us (guess was 1.0).
constexpr double kLatencyUs = 1.6;
// x re-read from L2 per CTA, charged as this fraction of a DRAM byte (fitted 0.25).
constexpr double kXReadCost = 0.25;
// Fixed costs of the two reductions: one CTA barrier + shared-memory pass; the cluster
// barrier(s) + distributed-shared-memory traffic.
constexpr double kCtaReduceUs = 0.05;
constexpr double kClusterReduceUs = 0.2;
// Per wave of resident CTAs: CTA launch, first-load latency and epilogue chain; clusters add
// more (8192x1024 at split_k 1, 2, 4, 8 = 1, 2, 4, 8 waves costs ~3 us per extra wave).
constexpr double kWaveUs = 1.0;
constexpr double kClusterWaveUs = 3.0;

double weight_bytes(const GemmProblem& p) {
  return static_cast<double>(p.n) * static_cast<double>(p.k) * dtype_size(p.b_type);
}

// The GEMV default (kGemvDefault*), or nullptr outside its region or where it cannot run p.
SolutionPtr gemv_default(const GemvSolutions& gemv, const GemmProblem& p) {
  if (p.m != 1 || p.n > kGemvDefaultMaxN || p.k < kGemvDefaultMinK || weight_bytes(p) < kGemvDefaultMinWeightBytes)
    return nullptr;
  for (const auto& s : gemv)
    if (s->tile() == kGemvDefaultTile && s->can_implement(p)) return s;
  return nullptr;
}

// The M = 9-16 default (kM16Default*), or nullptr outside its region or where it cannot run p.
SolutionPtr m16_default(const MmaSolutions& mma, const GemmProblem& p) {
  if (p.k < 2048 || (p.k < 4096 && p.n > 1024)) return nullptr;
  if (weight_bytes(p) < kM16DefaultMinWeightBytes || weight_bytes(p) > kM16DefaultMaxWeightBytes) return nullptr;
  const std::int64_t tiles = ceil_div(p.n, std::int64_t{kM16DefaultTile.block_n()});
  const int sms = device_sms(p.device);
  if (sms <= 0) return nullptr;
  int split = 1;
  while (split < kM16DefaultMaxSplit && tiles * split * 2 <= kM16DefaultCtasPerSm * sms) split *= 2;
  for (const auto& s : mma.weight_b)
    if (s->tile() == kM16DefaultTile && s->split_k() == split && s->can_implement(p)) return s;
  return nullptr;
}

// M <= 8: the weight-as-A register-batch candidate the model expects fastest, or nullptr.
SolutionPtr modelled_default(const MmaSolutions& mma, const GemmProblem& p) {
  if (p.m > kDefaultMaxM || p.k < kDefaultMinK) return nullptr;
  if (p.m >= 2 && p.k <= kDefaultShortMaxK && p.n > kDefaultShortMaxN) return nullptr;
  if (weight_bytes(p) < kDefaultMinWeightBytes || weight_bytes(p) > kDefaultMaxWeightBytes) return nullptr;
  const int sms = device_sms(p.device);
  if (sms <= 0) return nullptr;
  const int m_tile = smallest_mma_m_tile(mma, p);
  std::shared_ptr<const MmaWeightASolution> best;
  double best_us = std::numeric_limits<double>::infinity();
  for (const auto& s : mma.weight_a) {
    if (s->tile().stages > 0 || !is_mma_candidate(*s, p, m_tile)) continue;
    const double us = estimate_us(*s, p, sms);
    if (us < best_us) {  // ties keep the earlier (registration order: fewer splits)
      best_us = us;
      best = s;
    }
  }
  if (best == nullptr) return nullptr;
  if (p.m >= 2 && best->tile().block_n() > kDefaultMultiRowMaxBlockN) return nullptr;
  if (p.m >= 2 && best->split_k() == 1 && p.n > kDefaultMultiRowUnsplitMaxN) return nullptr;
  // Fewer CTAs than half the SMs even at split-K 8 (N tiny for its K): most of HBM's
  // bandwidth stays unclaimed, cuBLASLt's deeper split-K spreads further.
  if (2 * ceil_div(p.n, best->tile().block_n()) * best->split_k() < sms) return nullptr;
  return best;
}

// The default for the plain epilogue (no activation, alpha 1, no c).
SolutionPtr plain_default(const MmaSolutions& mma, const GemvSolutions& gemv, const GemmProblem& p) {
  if (SolutionPtr s = gemv_default(gemv, p)) return s;
  if (p.m >= kM16DefaultMinM && p.m <= kM16DefaultMaxM) return m16_default(mma, p);
  return modelled_default(mma, p);
}

}  // namespace

double estimate_us(const MmaWeightASolution& s, const GemmProblem& p, int sms) {
  const MmaWeightATile& t = s.tile();
  const std::int64_t ctas = ceil_div(p.n, t.block_n()) * s.split_k();
  const std::int64_t slots = static_cast<std::int64_t>(sms) * s.ctas_per_sm();
  const std::int64_t kb_warp = ceil_div(ceil_div(p.k, 32), std::int64_t{s.split_k()} * t.warps_k);
  const std::int64_t batches = ceil_div(kb_warp, t.unroll);
  // One batch: 64 bytes of each of the warp's rows per k-block.
  const double warp_inflight =
      64.0 * t.rows_per_warp * static_cast<double>(std::min<std::int64_t>(t.unroll, kb_warp));
  const double bytes = static_cast<double>(p.n) * static_cast<double>(p.k) *
                       static_cast<double>(dtype_size(p.b_type)) *
                       (1.0 + kXReadCost * static_cast<double>(p.m) / t.block_n());
  const double cta_bytes = bytes / static_cast<double>(ctas);
  auto wave_us = [&](std::int64_t c) {
    const double inflight = static_cast<double>(c) * t.warps_n * t.warps_k * warp_inflight;
    const double bw = std::min({kHbmBytesPerUs,
                                static_cast<double>(std::min<std::int64_t>(c, sms)) * kSmBytesPerUs,
                                inflight / kLatencyUs});
    // The SM holding the most CTAs of the wave streams them at its own limit.
    const double per_sm = static_cast<double>(ceil_div(c, sms)) * cta_bytes / kSmBytesPerUs;
    return std::max({static_cast<double>(c) * cta_bytes / bw, per_sm,
                     static_cast<double>(batches) * kLatencyUs});
  };
  const std::int64_t full = ctas / slots, rest = ctas % slots;
  const std::int64_t waves = full + (rest > 0 ? 1 : 0);
  double us = static_cast<double>(full) * wave_us(slots) + (rest > 0 ? wave_us(rest) : 0.0);
  us += static_cast<double>(waves) * (kWaveUs + (s.split_k() > 1 ? kClusterWaveUs : 0.0));
  if (t.warps_k > 1) us += kCtaReduceUs;
  if (s.split_k() > 1) us += kClusterReduceUs;
  return us;
}

SolutionPtr default_solution(const MmaSolutions& mma, const GemvSolutions& gemv, const GemmProblem& p) {
  // a8w8 (the FP8 and INT8 GEMV and weight-as-B kernels): none of the regions above was measured
  // for 8-bit operands, so their problems keep the a8w8 family's cuBLASLt default until a tuned
  // row (or a region measured against it) names a skinny solution.
  if (p.family != OpFamily::kA16W16) return nullptr;
  if (p.plain_epilogue()) return plain_default(mma, gemv, p);
  // An activation after the optional bias: the plain problem's pick, which applies it in its
  // stores (can_implement refuses alpha != 1 and beta * c). On the suite's 32 decode problems
  // with gelu + bias (H200, M = 1 and 16) the tuner's fused skinny picks ran 1.17x the cuBLASLt
  // default GEMM plus a separate pass; the staged and fused cuBLASLt/CUTLASS paths were slower.
  GemmProblem plain = p;
  plain.activation = Activation::kNone;
  SolutionPtr s = plain_default(mma, gemv, plain);
  return s != nullptr && s->can_implement(p) ? s : nullptr;
}

}  // namespace tgemm::skinny
