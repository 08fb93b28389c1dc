#!/usr/bin/env python3
"""The summary of `make bench-ublk`: bench-ublk.sh's raw.jsonl in, table out.

  report_ublk.py --raw raw.jsonl --out DIR [--profile profile.txt]

Writes DIR/table.md (targets against this run's figures, the full table, the
stripe gather against per-unit writes, the profile), DIR/results.json (the
summary and every raw record) and DIR/plot.png (gnuplot); prints the table.

Per configuration (kind dm or ublk, target, engine, data path) and
workload, medians over the rounds: IOPS, MiB/s, and CPU per I/O in
microseconds: fio and the daemon (user + system, their own threads), and the
whole guest's busy time (which also holds kernel workers such as dm-raid1's
kmirrord); and the exact counts: bytes copied per byte served (by the driver
through tag buffers, by the daemon's memcpy), IORING_OP_BPF requests and
bytes. Ratios are taken within the one run: ublk against dm of the same
target, zero copy against copy, the bpf engine against uring. Guest figures
are emulated (TCG): only ratios mean anything.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess

MIB = float(1 << 20)
TARGETS = ["linear", "stripe", "stripe-gather", "mirror"]
JUDGED = ["4k-qd1", "4k-qd32", "1m-qd8"]     # the targets' and the plot's
WORKLOADS = JUDGED + ["4k-qd32-j2", "1m-qd8-j2", "1m-read"]
PATHS = ["zero-copy", "copy"]
MOVERS = (["dm"] + [f"ublk {e} {p}" for p in PATHS for e in ("bpf", "uring")]
          + ["dm crc32c", "ublk bpf zero-copy crc32c"])
# issue 32: a device with integrity = crc32c against the same without
INTEGRITY_GOAL = 0.8
# issue 31: zero-copy ublk against dm over the same members, by workload
GOALS = {"1m-qd8": 0.8, "4k-qd32": 0.9, "4k-qd1": 0.2}
ZC_VS_COPY = 1.5        # zero copy's MiB/s at 1M against the copying path's
ZC_CPU = 0.5            # ... and its daemon CPU per 1M I/O, at most this much


def load(path):
    recs = []
    if os.path.exists(path):
        with open(path) as f:
            recs = [json.loads(line) for line in f if line.strip()]
    return recs


def mover(r):
    # records from before the data path was a column ran the copying path
    i = r.get("integrity") or "none"
    if r["kind"] == "dm":
        # dm over dm-integrity members (issue 32)
        return "dm" + (f" {i}" if i not in ("none", "-") else "")
    q = r.get("queues") or 1
    return (f"ublk {r['engine']} {r.get('path') or 'copy'}" + (f" {q}q" if q > 1 else "")
            + (f" {i}" if i != "none" else ""))


def present(groups, i, order):
    """the movers (i=0) or workloads (i=2) of this run: known ones first, in their order"""
    seen = {k[i] for k in groups}
    return [x for x in order if x in seen] + sorted(seen - set(order))


def metric(w):
    """what a workload is judged by: IOPS at 4K, MiB/s at 1M"""
    return "mib_s" if w.startswith("1m") else "iops"


def summarize(recs):
    groups = {}
    for r in recs:
        groups.setdefault((mover(r), r["target"], r["workload"]), []).append(r)
    out = {}
    for k, rs in groups.items():
        good = [r for r in rs if r.get("rc") == 0 and r.get("error") == 0 and r.get("runtime_ms", 0) > 0]
        g = {"mover": k[0], "target": k[1], "workload": k[2], "runs": len(good),
             "failed": len(rs) - len(good), "accel": rs[0].get("accel")}
        if good:
            med = lambda f: statistics.median([f(r) for r in good])
            g["iops"] = med(lambda r: r["ios"] / (r["runtime_ms"] / 1e3))
            g["iops_min"] = min(r["ios"] / (r["runtime_ms"] / 1e3) for r in good)
            g["iops_max"] = max(r["ios"] / (r["runtime_ms"] / 1e3) for r in good)
            g["mib_s"] = med(lambda r: (r["read_bytes"] + r["write_bytes"]) / MIB / (r["runtime_ms"] / 1e3))
            g["mib_s_min"] = min((r["read_bytes"] + r["write_bytes"]) / MIB / (r["runtime_ms"] / 1e3) for r in good)
            g["mib_s_max"] = max((r["read_bytes"] + r["write_bytes"]) / MIB / (r["runtime_ms"] / 1e3) for r in good)
            g["fio_us_per_io"] = med(lambda r: (r["user"] + r["sys"]) * 1e6 / r["ios"])
            g["daemon_us_per_io"] = med(lambda r: r.get("daemon_cpu", 0) * 1e6 / r["ios"])
            g["cpu_us_per_io"] = g["fio_us_per_io"] + g["daemon_us_per_io"]
            g["busy_us_per_io"] = med(lambda r: r.get("busy_cpu", 0) * 1e6 / r["ios"])
            if all(r.get(k) is not None for r in good
                   for k in ("bpf_ops", "bpf_bytes", "user_copied", "dev_reads", "dev_writes")):
                # the daemon's counters cover every workload of one life: per request
                reqs = med(lambda r: r["dev_reads"] + r["dev_writes"])
                g["bpf_ops_per_req"] = med(lambda r: r["bpf_ops"]) / reqs if reqs else 0
                g["bpf_bytes_per_req"] = med(lambda r: r["bpf_bytes"]) / reqs if reqs else 0
                g["user_copied_per_req"] = med(lambda r: r["user_copied"]) / reqs if reqs else 0
                g["dev_errors"] = max(r.get("dev_errors") or 0 for r in good)
            if all(r.get(k) is not None for r in good
                   for k in ("driver_copied", "user_copied", "dev_bytes_read", "dev_bytes_written")):
                # bytes moved between buffers per byte the device served: 0 is zero copy
                served = med(lambda r: r["dev_bytes_read"] + r["dev_bytes_written"])
                # integrity's reads: copied once in the kernel, staging -> pages ("filled")
                g["copied_per_byte"] = (med(lambda r: r["driver_copied"] + r["user_copied"]
                                            + (r.get("filled") or 0)) / served if served else None)
                g["bpf_bytes_per_byte"] = med(lambda r: r["bpf_bytes"]) / served if served else None
                g["data_path_run"] = good[0].get("data_path_run")
        out[k] = g
    return out


def fmt(v, f="{:.0f}"):
    return "-" if v is None else f.format(v)


def ratio(a, b):
    return a / b if a is not None and b else None


def fig(g, m):
    return g.get(m) if g else None


def dm_of(groups, target, w):
    return groups.get(("dm", "stripe" if target == "stripe-gather" else target, w))


def targets_md(groups):
    lines = ["## Targets (issue 31)", "",
             "Zero-copy ublk (bpf engine) against dm over the same members: "
             + ", ".join(f"{w} >= {g}x" for w, g in GOALS.items())
             + f" (IOPS at 4K, MiB/s at 1M); zero copy against the copying path >= {ZC_VS_COPY}x MiB/s at 1M "
             f"and daemon CPU per 1M I/O <= {ZC_CPU}x. Ratios of medians within this one run.", "",
             "| target | workload | dm | zero-copy | zc/dm | copy | copy/dm | zc/copy | daemon us/IO zc/copy | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    verdicts = []
    for t in TARGETS:
        for w in JUDGED:
            d = dm_of(groups, t, w)
            z, c = groups.get(("ublk bpf zero-copy", t, w)), groups.get(("ublk bpf copy", t, w))
            if not (z or c):
                continue
            m = metric(w)
            rz, rc, rzc = ratio(fig(z, m), fig(d, m)), ratio(fig(c, m), fig(d, m)), ratio(fig(z, m), fig(c, m))
            rcpu = ratio(fig(z, "daemon_us_per_io"), fig(c, "daemon_us_per_io"))
            miss = []
            if z and w in GOALS and (rz is None or rz < GOALS[w]):
                miss.append(f"zero-copy {fmt(rz, '{:.2f}')}x dm")
            if z and c and w.startswith("1m"):
                if rzc is None or rzc < ZC_VS_COPY:
                    miss.append(f"zero-copy {fmt(rzc, '{:.2f}')}x copy")
                if rcpu is None or rcpu > ZC_CPU:
                    miss.append(f"daemon CPU {fmt(rcpu, '{:.2f}')}x copy's")
            v = ("n/a (copying path only)" if not z else "met" if not miss else "missed: " + ", ".join(miss))
            verdicts.append({"target": t, "workload": w, "metric": m, "zc_vs_dm": rz, "copy_vs_dm": rc,
                             "zc_vs_copy": rzc, "zc_cpu_vs_copy": rcpu, "verdict": v})
            unit = " MiB/s" if m == "mib_s" else ""
            lines.append(f"| {t} | {w} | {fmt(fig(d, m))}{unit} | {fmt(fig(z, m))} | {fmt(rz, '{:.2f}')} | "
                         f"{fmt(fig(c, m))} | {fmt(rc, '{:.2f}')} | {fmt(rzc, '{:.2f}')} | {fmt(rcpu, '{:.2f}')} | {v} |")
    return lines, verdicts


def counts_md(groups):
    lines = ["## Exact counts", "",
             "From the daemon's status file over each device's life (every workload of a round; medians over "
             "the rounds): bytes copied between buffers per byte the device served (by the ublk driver "
             "through tag buffers, plus the daemon's memcpy), IORING_OP_BPF requests and bytes per request.", "",
             "| target | mover | data path run | copied per byte served | IORING_OP_BPF per req | "
             "IORING_OP_BPF bytes per req | memcpy bytes per req |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for t in TARGETS:
        for mv in MOVERS[1:]:
            g = groups.get((mv, t, "1m-qd8")) or next((groups.get((mv, t, w)) for w in WORKLOADS
                                                      if groups.get((mv, t, w))), None)
            if not g or "copied_per_byte" not in g:
                continue
            lines.append(f"| {t} | {mv} | {g.get('data_path_run') or '-'} | {fmt(g.get('copied_per_byte'), '{:.3f}')} | "
                         f"{fmt(g.get('bpf_ops_per_req'), '{:.2f}')} | {fmt(g.get('bpf_bytes_per_req'))} | "
                         f"{fmt(g.get('user_copied_per_req'))} |")
    return lines


def integrity_md(groups):
    """integrity = crc32c against the same zero-copy bpf device without (issue 32), and
    dm-integrity's cost to dm over the same members beside it"""
    lines = ["## Integrity (issue 32)", "",
             f"ublk bpf zero copy with integrity = crc32c against the same without: >= {INTEGRITY_GOAL}x "
             "(IOPS at 4K qd32, MiB/s at 1M). Writes summed in the kernel on the request's pages before "
             "they go; reads land in staging, are summed and checked there, then copied into the "
             "request's pages (IORING_OP_BPF); the sums in a file of the state_dir. Beside it, the same dm "
             "target over dm-integrity members (bitmap mode, crc32c tags interleaved on each member) against "
             "dm over the bare members. Ratios of medians within this one run.", "",
             "| target | workload | dm | dm over dm-integrity | ratio | ublk without | ublk crc32c | ratio | "
             "ublk crc32c / dm-integrity | daemon us/IO without | crc32c | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    rows = 0
    for t in TARGETS:
        for w in JUDGED:
            z, i = groups.get(("ublk bpf zero-copy", t, w)), groups.get(("ublk bpf zero-copy crc32c", t, w))
            d, di = groups.get(("dm", t, w)), groups.get(("dm crc32c", t, w))
            if not (i or di):
                continue
            m = metric(w)
            r = ratio(fig(i, m), fig(z, m))
            v = ("-" if w == "4k-qd1" or not i else "met" if r is not None and r >= INTEGRITY_GOAL
                 else f"missed ({fmt(r, '{:.2f}')}x)")
            unit = " MiB/s" if m == "mib_s" else " IOPS"
            lines.append(f"| {t} | {w} | {fmt(fig(d, m))}{unit} | {fmt(fig(di, m))} | "
                         f"{fmt(ratio(fig(di, m), fig(d, m)), '{:.2f}')} | {fmt(fig(z, m))} | {fmt(fig(i, m))} | "
                         f"{fmt(r, '{:.2f}')} | {fmt(ratio(fig(i, m), fig(di, m)), '{:.2f}')} | "
                         f"{fmt(fig(z, 'daemon_us_per_io'), '{:.1f}')} | {fmt(fig(i, 'daemon_us_per_io'), '{:.1f}')} | "
                         f"{v} |")
            rows += 1
    return lines if rows else []


def full_md(groups):
    lines = ["## Every configuration", "",
             "Medians over the rounds (min..max for the judged figure); CPU per I/O in us: fio + daemon "
             "(their own threads, user + system), and the whole guest's busy time.", "",
             "| target | workload | mover | runs | IOPS | MiB/s | min..max | fio us/IO | daemon us/IO | "
             "fio+daemon us/IO | guest busy us/IO |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for t in TARGETS:
        for w in present(groups, 2, WORKLOADS):
            for mv in present(groups, 0, MOVERS):
                g = groups.get((mv, t, w))
                if not g:
                    continue
                m = metric(w)
                rng = f"{fmt(g.get(m + '_min'))}..{fmt(g.get(m + '_max'))}" if m in g else "-"
                lines.append(f"| {t} | {w} | {mv} | {g['runs']}{' (' + str(g['failed']) + ' failed)' if g['failed'] else ''} | "
                             f"{fmt(g.get('iops'))} | {fmt(g.get('mib_s'), '{:.1f}')} | {rng} | "
                             f"{fmt(g.get('fio_us_per_io'), '{:.1f}')} | {fmt(g.get('daemon_us_per_io'), '{:.1f}')} | "
                             f"{fmt(g.get('cpu_us_per_io'), '{:.1f}')} | {fmt(g.get('busy_us_per_io'), '{:.1f}')} |")
    return lines


def queues_md(groups):
    """what a second queue buys: each ublk configuration run with 1 and N queues"""
    lines = ["## Queues (nr_queues 1 against more, same workload)", "",
             "| target | workload | mover | 1 queue | more | queues | ratio | daemon us/IO 1 | more |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    rows = 0
    for (mv, t, w), g in sorted(groups.items()):
        base, _, q = mv.rpartition(" ")
        if not (q.endswith("q") and q[:-1].isdigit()) or (base, t, w) not in groups:
            continue
        one, m = groups[(base, t, w)], metric(w)
        lines.append(f"| {t} | {w} | {base} | {fmt(fig(one, m))} | {fmt(fig(g, m))} | {q[:-1]} | "
                     f"{fmt(ratio(fig(g, m), fig(one, m)), '{:.2f}')} | "
                     f"{fmt(fig(one, 'daemon_us_per_io'), '{:.1f}')} | {fmt(fig(g, 'daemon_us_per_io'), '{:.1f}')} |")
        rows += 1
    return lines if rows else []


def gather_md(groups):
    lines = ["## Stripe: gathered units against one write per unit", "",
             "bpf on zero copy (the units gathered by IORING_OP_BPF from the request's pages), uring on the "
             "copying path (memcpy cannot reach the pages): "
             "stripe_io = per-unit (the default: each 64K unit straight from the request's buffer) against "
             "stripe_io = gather (a member's units gathered into one write: IORING_OP_BPF with the bpf "
             "engine, memcpy with uring). Exact counts per ublk request from the daemon's status file, over the "
             "daemon's whole life (every workload of a round; medians over the rounds).", "",
             "| workload | per-unit bpf zc | per-unit uring copy | gather bpf zc | gather uring copy | gather bpf / per-unit bpf | "
             "gather bpf / gather uring | gather bpf: IORING_OP_BPF per req, bytes per req | gather uring: memcpy bytes per req |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for w in JUDGED:
        m = metric(w)
        # per-unit beside the gather on the same path: bpf on zero copy, uring (memcpy) copies
        pb, pu = groups.get(("ublk bpf zero-copy", "stripe", w)), groups.get(("ublk uring copy", "stripe", w))
        gb, gu = groups.get(("ublk bpf zero-copy", "stripe-gather", w)), groups.get(("ublk uring copy", "stripe-gather", w))
        if not (gb or gu):
            continue
        unit = " MiB/s" if m == "mib_s" else " IOPS"
        lines.append(f"| {w} | {fmt(fig(pb, m))}{unit} | {fmt(fig(pu, m))} | {fmt(fig(gb, m))} | {fmt(fig(gu, m))} | "
                     f"{fmt(ratio(fig(gb, m), fig(pb, m)), '{:.2f}')} | {fmt(ratio(fig(gb, m), fig(gu, m)), '{:.2f}')} | "
                     f"{fmt(fig(gb, 'bpf_ops_per_req'), '{:.2f}')}, {fmt(fig(gb, 'bpf_bytes_per_req'))} | "
                     f"{fmt(fig(gu, 'user_copied_per_req'))} |")
    return lines


def plot(groups, out_dir):
    gp = shutil.which("gnuplot")
    if not gp:
        return "gnuplot not installed"
    script = ["set terminal pngcairo size 1400,1080 font ',9'",
              f"set output '{os.path.join(out_dir, 'plot.png')}'",
              "set datafile missing '-'", "set style data histograms",
              "set style histogram clustered gap 1", "set style fill solid 0.8 border -1",
              "set boxwidth 0.9", "set grid ytics", "set key top right", "set yrange [0:*]",
              "set multiplot layout 3,1 title 'make bench-ublk: ublk (bpf, uring engines; zero copy, copy) against dm, same brd members (medians, one guest run)'"]
    for w in JUDGED:
        m = metric(w)
        dat = os.path.join(out_dir, f"plot-{w}.dat")
        with open(dat, "w") as f:
            f.write("# target " + " ".join(x.replace(" ", "-") for x in MOVERS) + "\n")
            for t in TARGETS:
                f.write(f'"{t}" ' + " ".join(fmt(fig(groups.get((mv, t, w)), m), "{:.1f}") if groups.get((mv, t, w))
                                            else (fmt(fig(dm_of(groups, t, w), m), "{:.1f}") if mv == "dm" else "-")
                                            for mv in MOVERS) + "\n")
        script.append(f"set title '{w}'")
        script.append(f"set ylabel '{'MiB/s' if m == 'mib_s' else 'IOPS'}'")
        script.append("plot " + ", ".join(f"'{dat}' using {i + 2}:xtic(1) title '{mv}'" if i == 0
                                          else f"'' using {i + 2} title '{mv}'" for i, mv in enumerate(MOVERS)))
    script.append("unset multiplot")
    gpf = os.path.join(out_dir, "plot.gp")
    with open(gpf, "w") as f:
        f.write("\n".join(script) + "\n")
    r = subprocess.run([gp, gpf], capture_output=True, text=True)
    return None if r.returncode == 0 else "gnuplot: " + r.stderr.strip()[:300]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--raw", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--profile")
    a = p.parse_args()
    recs = load(a.raw)
    if not recs:
        print(f"report_ublk: no records in {a.raw}")
        return 1
    groups = summarize(recs)
    accel = recs[0].get("accel", "?")
    rounds = max(r["round"] for r in recs)
    head = [f"# make bench-ublk: ublk (zero copy and copy) against dm (guest, accelerator {accel}, {rounds} rounds of "
            f"{recs[0].get('runtime_s')} s per fio run, {recs[0].get('member_mb')} MiB per brd member)", ""]
    tl, verdicts = targets_md(groups)
    im = integrity_md(groups)
    md = head + tl + [""] + (im + [""] if im else []) + counts_md(groups) + [""] + gather_md(groups) + [""]
    qm = queues_md(groups)
    md += (qm + [""] if qm else []) + full_md(groups)
    if a.profile and os.path.exists(a.profile) and os.path.getsize(a.profile):
        md += ["", "## Profile (perf record -a, cpu-clock)", "", "```"] + open(a.profile).read().splitlines() + ["```"]
    why = plot(groups, a.out)
    if why:
        md += ["", f"(no plot: {why})"]
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"summary": list(groups.values()), "targets": verdicts, "raw": recs}, f, indent=1)
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
