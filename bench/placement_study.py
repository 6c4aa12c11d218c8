"""Placement study: does the tuned-vs-default ratio of a problem depend on where its operands
live? Per problem, several placements (fresh allocations behind a random pad), each timed as the
bench does: two CUDA graphs (default table / tuned table), interleaved ABBA rounds, paired ratio.

    python3 bench/placement_study.py TUNED.csv 1x4096x14336,64x24576x1536 [PLACEMENTS [SEED [OUT.json]]]

"default" routes each of TUNED.csv's rows to cublaslt:heuristic (the shipped tables are hidden
behind an empty TGEMM_CONFIG_DIR). Results: docs/perf-notes.md, "Placement study"."""
import json, os, random, statistics, sys, tempfile
import torch
import tgemm

tuned = sys.argv[1]
probs = [tuple(map(int, s.split("x"))) for s in sys.argv[2].split(",")]
nplace = int(sys.argv[3]) if len(sys.argv) > 3 else 5
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
empty_dir = tempfile.mkdtemp()
empty = os.path.join(empty_dir, "heuristic.csv")
with open(tuned) as f, open(empty, "w") as g:  # the tuned rows, each routed to cuBLASLt's heuristic
    g.write(f.readline())
    for line in f:
        c = line.rstrip("\n").split(",")
        c[10], c[11], c[12], c[14] = "cublaslt", "-1", "0", "cublaslt:heuristic"
        g.write(",".join(c) + "\n")
os.environ["TGEMM_CONFIG_DIR"] = empty_dir
L2 = torch.cuda.get_device_properties(0).L2_cache_size
rng = random.Random(seed)


def use(table):
    os.environ["TGEMM_CONFIG_GEMM_BF16"] = table
    tgemm.reload_config()


def graph_of(fn, n=20):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn(0); fn(1)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for i in range(n):
            fn(i)
    return g


def replay_times(g, reps=5, warm=2):
    for _ in range(warm):
        g.replay()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
    ev[0].record()
    for i in range(reps):
        g.replay(); ev[i + 1].record()
    torch.cuda.synchronize()
    return [ev[i].elapsed_time(ev[i + 1]) * 1000 / 20 for i in range(reps)]


out = []
for (m, n, k) in probs:
    wbytes = n * k * 2
    R = max(1, min(32, int(3 * L2 / (wbytes + m * k * 2 + m * n * 2)) + 1))
    for p in range(nplace):
        pad = torch.empty(rng.randrange(1, 64) << 20, dtype=torch.uint8, device="cuda")
        ws = [torch.empty(n, k, dtype=torch.bfloat16, device="cuda").uniform_(-1, 1) for _ in range(R)]
        xs = [torch.empty(m, k, dtype=torch.bfloat16, device="cuda").uniform_(-1, 1) for _ in range(R)]
        os_ = [torch.empty(m, n, dtype=torch.bfloat16, device="cuda") for _ in range(R)]
        names, graphs = [], []
        for table in (empty, tuned):
            use(table)
            names.append(tgemm.describe(xs[0], ws[0])["kernelName"])
            graphs.append(graph_of(lambda i: tgemm.gemm_a16w16_out(xs[i % R], ws[i % R], os_[i % R])))
        ratios, td, tt = [], [], []
        for r in range(10):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            med = {}
            for g in order:
                t = replay_times(graphs[g])
                med[g] = statistics.median(t)
            td.append(med[0]); tt.append(med[1]); ratios.append(med[0] / med[1])
        row = dict(M=m, N=n, K=k, place=p, rot=R, w_ptr=hex(ws[0].data_ptr()), default_us=statistics.median(td),
                   tuned_us=statistics.median(tt), speedup=statistics.median(ratios), default=names[0], tuned=names[1])
        print(f"{m}x{n}x{k} p{p} R={R} ptr={row['w_ptr']} default {row['default_us']:.2f} tuned {row['tuned_us']:.2f} speedup {row['speedup']:.3f}", flush=True)
        out.append(row)
        del graphs, ws, xs, os_, pad
    torch.cuda.synchronize()
meta = {"study": "placement", "device": torch.cuda.get_device_name(0), "date": __import__("datetime").date.today().isoformat(),
        "commit": os.environ.get("TGEMM_COMMIT", ""), "table": tuned, "seed": seed, "rows": out}
json.dump(meta, open(sys.argv[5] if len(sys.argv) > 5 else "/dev/null", "w"), indent=1)
