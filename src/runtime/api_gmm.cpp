// Public gmm entry point: validate, return early on empty problems, then run the solution
// route_gmm picks (src/grouped/gmm_dispatch.h): the forced backend, the tuned table's row, or the
// default rule between the CUTLASS grouped kernel and the tile kernels.
#include "core/check.h"
#include "core/log.h"
#include "core/validate.h"
#include "grouped/gmm_cutlass.h"
#include "grouped/gmm_dispatch.h"
#include "grouped/gmm_launch.h"
#include "runtime/runtime.h"
#include "tgemm/gemm.h"
#include "tgemm/gmm.h"

namespace tgemm {

namespace {

using grouped_cutlass::GroupedKernel;

// The row's CUTLASS instance where it is loadable on `device` and can take the call; else null
// and *why says what is missing.
const GroupedKernel* row_kernel(const GmmRow& row, const grouped_cutlass::GroupedShape& s, int device,
                                std::string* why) {
  for (const GroupedKernel* k : grouped_cutlass::loadable_grouped_kernels(device)) {
    if (row.solution != k->generated_name) continue;
    if (k->config.in != s.in || k->config.b_k_major != s.b_k_major || !grouped_cutlass::cutlass_can_take(s)) {
      *why = row.solution + " cannot take this call (its dtype, rhs layout, bias, out dtype or operand alignment)";
      return nullptr;
    }
    return k;
  }
  *why = "solution '" + row.solution + "' is neither tile nor a CUTLASS grouped instance loadable on this device";
  return nullptr;
}

void log_route(GmmTables& tables, const GmmKey& key, const GmmRoute& r) {
  std::string line = "gmm " + key.describe() + ": ";
  if (r.row != nullptr) {
    line += "level table in " + r.row->file + ":" + std::to_string(r.row->line);
  } else {
    line += std::string("level ") + r.level;
  }
  line += ", solution " + gmm_solution_name(r.kernel);
  if (tables.first_time(line)) log_info(line);
}

}  // namespace

std::string gmm_solution_name(const GroupedKernel* kernel) {
  return kernel == nullptr ? std::string(kGmmTileSolution) : std::string(kernel->generated_name);
}

const GroupedKernel* gmm_default_kernel(const GmmCall& call, int device) {
  return grouped_cutlass::pick_grouped_kernel(gmm_grouped_shape(call.problem, call.args), device,
                                              GroupedBackend::kAuto);
}

std::vector<const GroupedKernel*> gmm_candidates(const GmmCall& call, int device) {
  const grouped_cutlass::GroupedShape s = gmm_grouped_shape(call.problem, call.args);
  std::vector<const GroupedKernel*> out = {nullptr};
  if (!grouped_cutlass::cutlass_can_take(s)) return out;
  for (const GroupedKernel* k : grouped_cutlass::loadable_grouped_kernels(device)) {
    if (k->config.in == s.in && k->config.b_k_major == s.b_k_major) out.push_back(k);
  }
  return out;
}

GmmRoute route_gmm(const GmmCall& call, int device) {
  const GmmProblem& p = call.problem;
  const grouped_cutlass::GroupedShape s = gmm_grouped_shape(p, call.args);
  Runtime& rt = Runtime::get();
  const GroupedBackend backend = rt.dispatcher().settings().grouped_backend;
  GmmTables& tables = rt.gmm_tables();
  const DeviceInfo& dev = rt.platform().device_info(device);
  const GmmKey key =
      gmm_key(p.m, p.groups, p.n, p.k, p.transpose_rhs, p.in_type, p.out_type, p.has_bias, dev.arch, dev.sm_count);
  GmmRoute r;
  if (backend != GroupedBackend::kAuto) {
    r.kernel = grouped_cutlass::pick_grouped_kernel(s, device, backend);
    r.level = "forced";
  } else if (const GmmRow* row = tables.table_for(dev).find(key)) {
    std::string why;
    const GroupedKernel* k = row->solution == kGmmTileSolution ? nullptr : row_kernel(*row, s, device, &why);
    if (why.empty()) {
      r.kernel = k;
      r.level = "table";
      r.row = row;
    } else {
      const std::string where = row->file + ":" + std::to_string(row->line);
      log_warning_once("gmm-row:" + where, where + ": " + why + ", row skipped (gmm's default rule serves)");
    }
  }
  if (r.level == std::string_view("default")) {
    r.kernel = grouped_cutlass::pick_grouped_kernel(s, device, GroupedBackend::kAuto);
    // Only keys no row serves: a tune of the capture adds their rows.
    if (key.rows_per_group > 0) tables.record_untuned(key);
  }
  if (tables.log_choices()) log_route(tables, key, r);
  return r;
}

void run_gmm_on(const GmmCall& call, const GroupedKernel* kernel, int device, Stream stream) {
  const GmmProblem& p = call.problem;
  Runtime& rt = Runtime::get();
  if (kernel != nullptr) {
    Workspace ws = rt.workspaces().get(device, stream, gmm_cutlass_workspace_bytes(p, *kernel, device));
    launch_gmm_cutlass(p, call.args, *kernel, ws.data, device, stream);
    return;
  }
  Workspace ws = rt.workspaces().get(device, stream, gmm_workspace_bytes(p));
  launch_gmm_tiled(p, call.args, ws.data, stream);
}

void gmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes, const TensorView& out,
         bool transpose_rhs, const TensorView* bias, Stream stream) {
  const GmmCall call = validate_gmm(lhs, rhs, group_sizes, out, transpose_rhs, bias);
  const GmmProblem& p = call.problem;
  if (p.m == 0 || p.n == 0) return;
  const int device = Runtime::get().platform().current_device();
  run_gmm_on(call, route_gmm(call, device).kernel, device, stream);
}

DispatchInfo describe_gmm(const TensorView& lhs, const TensorView& rhs, const TensorView& group_sizes,
                          const TensorView& out, bool transpose_rhs, const TensorView* bias) {
  const GmmCall call = validate_gmm(lhs, rhs, group_sizes, out, transpose_rhs, bias, "describe_gmm");
  DispatchInfo info;
  if (call.problem.m == 0 || call.problem.n == 0) {
    info.level = "empty";
    info.libtype = "none";
    info.kernel_name = "none";
    return info;
  }
  const GmmRoute r = route_gmm(call, Runtime::get().platform().current_device());
  info.level = r.level;
  if (r.row != nullptr) {
    info.matched_m = r.row->m > 0 ? r.row->m : r.row->key.groups * r.row->key.rows_per_group;
    info.file = r.row->file;
    info.line = r.row->line;
  }
  info.libtype = r.kernel == nullptr ? "grouped_tile" : "grouped_cutlass";
  info.kernel_name = gmm_solution_name(r.kernel);
  return info;
}

}  // namespace tgemm
