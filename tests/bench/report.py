#!/usr/bin/env python3
"""Summaries of `make bench`: raw.jsonl records (one per run) in, tables out.

  report.py summarize --raw raw.jsonl --md table.md --json summary.json [--tap-lines F]
      one system's figures (used in the guest by tests/bench/bench.sh)
  report.py merge --guest DIR --host DIR [--kfunc DIR] --out DIR [--run-log FILE]
      the guest's and the host's figures in one table (host columns beside
      the guest's), results.json with every raw figure, plot.png (gnuplot);
      prints the table
  report.py scale --raw raw.jsonl --md table.md [--json scale.json]
      the scaling run (scale.sh): time and CPU per GiB by engine, number of
      pipelines and size

Per configuration: MiB/s median, min and max over the timed runs; CPU seconds
per GiB (user, system), io_uring_enter(2) / system calls / context switches
(voluntary + involuntary) per GiB, io-wq punts per block, and for the daemon
CQEs per block and bytes memcpy'd per byte moved (its own exact counts), as
medians.
Ratios: against fio at the same medium, block size and queue depth (queue
depth 1 for movers without one), and against iou-offloadd engine = uring with
the same transform, medium, block size and queue depth (1 likewise).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

GIB = float(1 << 30)
MIB = float(1 << 20)
MEDIA = ["memory", "tmpfs", "brd", "nullb", "virtio"]
TRANSFORMS = ["copy", "mirror", "stripe", "stripe-multi", "stripe-perunit", "destripe", "destripe-multi",
              "destripe-perunit", "gather", "copy-sum", "mirror-sum", "stripe-sum"]
MOVERS = ["memcpy", "memcpy-vec", "dd", "cp", "fio", "iou-offloadd uring", "iou-offloadd bpf", "iou-offloadd loop"]


def load(paths):
    recs = []
    for p in paths:
        if not p or not os.path.exists(p):
            continue
        with open(p) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        recs.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        print(f"report: {p}: bad line skipped ({e})", file=sys.stderr)
    return recs


def mover(r):
    return f"iou-offloadd {r['engine']}" if r["tool"] == "iou-offloadd" else r["tool"]


def key(r):
    return (r["system"], mover(r), r["transform"], r["medium"], int(r["bs"]), int(r["qd"]))


def size_name(b):
    if b == 0:
        return "-"
    if b % (1 << 30) == 0:
        return f"{b >> 30}G"
    if b % (1 << 20) == 0:
        return f"{b >> 20}M"
    if b % 1024 == 0:
        return f"{b >> 10}K"
    return str(b)


def config_key(g):
    """The key bench.sh uses for a configuration: tool|engine|transform|medium|bs|qd"""
    tool, engine = ("iou-offloadd", g["mover"].split()[1]) if g["mover"].startswith("iou-offloadd ") else (g["mover"], "-")
    return "|".join([tool, engine, g["transform"], g["medium"], str(g["bs"]), str(g["qd"]) if g["qd"] else "-"])


def summarize(recs):
    groups = {}
    for r in recs:
        groups.setdefault(key(r), []).append(r)
    out = []
    for k, rs in groups.items():
        system, mv, tf, medium, bs, qd = k
        timed = [r for r in rs if r.get("kind", "timed") == "timed" and r["rc"] == 0 and r["wall_s"] > 0]
        counted = [r for r in rs if r.get("kind", "timed") in ("timed", "counting") and r["rc"] == 0
                   and r["io_uring_enter"] >= 0]
        st_recs = [r for r in rs if r.get("kind") == "startup" and r["rc"] == 0]
        startup = [r["wall_s"] for r in st_recs]
        g = {"system": system, "accel": rs[0]["accel"], "mover": mv, "transform": tf, "medium": medium,
             "bs": bs, "qd": qd, "bytes": timed[0]["bytes"] if timed else rs[0]["bytes"], "runs": len(timed),
             "failed_runs": len([r for r in rs if r["rc"] != 0])}
        if timed:
            mibs = [r["bytes"] / r["wall_s"] / MIB for r in timed]
            g["mib_s"] = {"median": statistics.median(mibs), "min": min(mibs), "max": max(mibs)}
            g["user_s_per_gib"] = statistics.median([r["user_s"] * GIB / r["bytes"] for r in timed])
            g["sys_s_per_gib"] = statistics.median([r["sys_s"] * GIB / r["bytes"] for r in timed])
        if startup:
            g["startup_s"] = statistics.median(startup)
            g["startup_cpu_s"] = statistics.median([r["user_s"] + r["sys_s"] for r in st_recs])
            sc = [r["syscalls"] for r in st_recs if r.get("syscalls", -1) >= 0]
            if sc:
                g["startup_syscalls"] = statistics.median(sc)
            # what each further GiB costs: the timed runs less the one-block
            # run (start, BPF loading and verification, ring and buffer set-up)
            if timed and g["bytes"] > bs:
                net = g["bytes"] - bs
                g["net_cpu_s_per_gib"] = statistics.median(
                    [(r["user_s"] + r["sys_s"] - g["startup_cpu_s"]) * GIB / net for r in timed])
                if sc:
                    ns = [(r["syscalls"] - g["startup_syscalls"]) * GIB / net for r in timed if r.get("syscalls", -1) >= 0]
                    if ns:
                        g["net_syscalls_per_gib"] = statistics.median(ns)
            # the rate past the fixed cost; only where that cost is not most of the run
            if timed:
                wall = statistics.median([r["wall_s"] for r in timed])
                if g["startup_s"] < 0.8 * wall:
                    g["net_mib_s"] = (g["bytes"] - bs) / (wall - g["startup_s"]) / MIB
        if timed:
            cs = [r for r in timed if r.get("nvcsw", -1) >= 0 and r.get("nivcsw", -1) >= 0]
            if cs:
                g["csw_per_gib"] = statistics.median([(r["nvcsw"] + r["nivcsw"]) * GIB / r["bytes"] for r in cs])
                g["vcsw_per_gib"] = statistics.median([r["nvcsw"] * GIB / r["bytes"] for r in cs])
                g["ivcsw_per_gib"] = statistics.median([r["nivcsw"] * GIB / r["bytes"] for r in cs])
            pu = [r["punts"] / r["blocks"] for r in timed if r.get("punts", -1) >= 0 and r.get("blocks", 0) > 0]
            if pu:
                g["punts_per_block"] = statistics.median(pu)
            cq = [r["daemon_cqes"] / r["blocks"] for r in timed if r.get("daemon_cqes", -1) >= 0
                  and r.get("blocks", 0) > 0]
            if cq:
                g["cqes_per_block"] = statistics.median(cq)
            bo = [r["daemon_bpf_ops"] / r["blocks"] for r in timed if r.get("daemon_bpf_ops", -1) >= 0
                  and r.get("blocks", 0) > 0]
            if bo:
                g["bpf_ops_per_block"] = statistics.median(bo)
            # exact: the bytes the daemon memcpy'd (userspace and
            # uring_bpf_memcpy()) over the bytes it moved; else its rounded ratio
            mc = [(r["daemon_user_copied"] + r["daemon_bpf_bytes"]) / r["bytes"] for r in timed
                  if r.get("daemon_user_copied", -1) >= 0 and r.get("daemon_bpf_bytes", -1) >= 0]
            if not mc:
                mc = [r["daemon_copied_per_byte"] for r in timed if r.get("daemon_copied_per_byte", -1) >= 0]
            if mc:
                g["memcpy_per_byte"] = statistics.median(mc)
            mb = [r["daemon_user_copied"] + r["daemon_bpf_bytes"] for r in timed
                  if r.get("daemon_user_copied", -1) >= 0 and r.get("daemon_bpf_bytes", -1) >= 0]
            if mb:
                g["memcpy_bytes"] = statistics.median(mb)
        if counted:
            g["io_uring_enter_per_gib"] = statistics.median([r["io_uring_enter"] * GIB / r["bytes"] for r in counted])
            sc = [r["syscalls"] * GIB / r["bytes"] for r in counted if r["syscalls"] >= 0]
            if sc:
                g["syscalls_per_gib"] = statistics.median(sc)
        out.append(g)
    index = {(g["system"], g["mover"], g["transform"], g["medium"], g["bs"], g["qd"]): g for g in out}
    for g in out:
        if "mib_s" not in g:
            continue
        qd = g["qd"] or 1
        ref = index.get((g["system"], "fio", "copy", g["medium"], g["bs"], qd))
        if ref and "mib_s" in ref:
            g["vs_fio"] = g["mib_s"]["median"] / ref["mib_s"]["median"]
        ref = index.get((g["system"], "iou-offloadd uring", g["transform"], g["medium"], g["bs"], qd))
        if ref and "mib_s" in ref:
            g["vs_uring"] = g["mib_s"]["median"] / ref["mib_s"]["median"]
    out.sort(key=sort_key)
    return out


def order(lst, v):
    return lst.index(v) if v in lst else len(lst)


def sort_key(g):
    return (g["system"] != "guest", order(MEDIA, g["medium"]), order(TRANSFORMS, g["transform"]),
            g["bs"], order(MOVERS, g["mover"]), g["qd"])


def f_mibs(g):
    m = g.get("mib_s")
    return f"{m['median']:.0f} [{m['min']:.0f}, {m['max']:.0f}]" if m else "failed"


def f_cpu(g):
    if "user_s_per_gib" not in g:
        return "-"
    return f"{g['user_s_per_gib']:.2f} / {g['sys_s_per_gib']:.2f}"


def f_count(g, k):
    v = g.get(k)
    return "-" if v is None else f"{v:.0f}"


def f_ratio(v):
    return "-" if v is None else f"{v:.2f}"


def tap_line(g):
    s = f"{f_mibs(g)} MiB/s (median [min, max] of {g['runs']})"
    if "user_s_per_gib" in g:
        s += f", CPU {g['user_s_per_gib']:.2f} user + {g['sys_s_per_gib']:.2f} sys s/GiB"
    if "io_uring_enter_per_gib" in g:
        s += f", {g['io_uring_enter_per_gib']:.0f} io_uring_enter/GiB"
    if "syscalls_per_gib" in g:
        s += f", {g['syscalls_per_gib']:.0f} syscalls/GiB"
    if "punts_per_block" in g:
        s += f", {g['punts_per_block']:.2f} io-wq punts/block"
    if "cqes_per_block" in g:
        s += f", {g['cqes_per_block']:.2f} CQEs/block"
    if "memcpy_per_byte" in g:
        s += f", {g['memcpy_per_byte']:.3f} B memcpy'd/B"
    if "csw_per_gib" in g:
        s += f", {g['csw_per_gib']:.0f} context switches/GiB"
    if "startup_s" in g:
        s += f", {g['startup_s']:.2f} s for one block"
    return s


def f_csw(g):
    if "csw_per_gib" not in g:
        return "-"
    return f"{g['csw_per_gib']:.0f} ({g['vcsw_per_gib']:.0f} / {g['ivcsw_per_gib']:.0f})"


def f_num(g, k, fmt):
    v = None if g is None else g.get(k)
    return "-" if v is None else fmt.format(v)


def table(groups, host=None):
    """Markdown; host: the host's groups, matched by configuration, as extra columns"""
    hidx = {}
    for h in host or []:
        hidx[(h["mover"], h["transform"], h["medium"], h["bs"], h["qd"])] = h
    head = ["medium", "transform", "bs", "mover", "qd", "MiB/s median [min, max]", "CPU s/GiB user / sys",
            "io_uring_enter /GiB", "syscalls /GiB", "net syscalls /GiB", "net CPU s/GiB", "io-wq punts /block", "CQEs /block", "memcpy'd B /B moved",
            "ctx switches /GiB (vol / invol)", "startup s", "net MiB/s", "x fio", "x uring"]
    if host is not None:
        head += ["host MiB/s [min, max]", "host CPU s/GiB u / s", "host io_uring_enter /GiB", "host x fio"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join([" --- "] * 5 + [" ---: "] * (len(head) - 5)) + "|"]
    for g in groups:
        row = [g["medium"], g["transform"], size_name(g["bs"]), g["mover"], str(g["qd"]) if g["qd"] else "-",
               f_mibs(g), f_cpu(g), f_count(g, "io_uring_enter_per_gib"), f_count(g, "syscalls_per_gib"),
               f_num(g, "net_syscalls_per_gib", "{:.0f}"), f_num(g, "net_cpu_s_per_gib", "{:.2f}"),
               f_num(g, "punts_per_block", "{:.2f}"), f_num(g, "cqes_per_block", "{:.2f}"),
               f_num(g, "memcpy_per_byte", "{:.3f}"), f_csw(g),
               "-" if "startup_s" not in g else f"{g['startup_s']:.2f}",
               "-" if "net_mib_s" not in g else f"{g['net_mib_s']:.0f}",
               f_ratio(g.get("vs_fio")), f_ratio(g.get("vs_uring"))]
        if host is not None:
            h = hidx.get((g["mover"], g["transform"], g["medium"], g["bs"], g["qd"]))
            row += [f_mibs(h), f_cpu(h), f_count(h, "io_uring_enter_per_gib"), f_ratio(h.get("vs_fio"))] if h \
                else ["-"] * 4
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def cmd_summarize(a):
    recs = load(a.raw)
    groups = summarize(recs)
    with open(a.md, "w") as f:
        f.write(table(groups))
    with open(a.json, "w") as f:
        json.dump({"groups": groups}, f, indent=1)
    if a.tap_lines:
        with open(a.tap_lines, "w") as f:
            for g in groups:
                f.write(config_key(g) + "\t" + tap_line(g) + "\n")
    sys.stdout.write(table(groups))


def plot(groups, out_dir, title):
    """plot.png: MiB/s by mover and block size, a panel per system and medium (transform copy)"""
    gp = shutil.which("gnuplot")
    if not gp:
        return "gnuplot not installed"
    panels = []
    for system in ["guest", "host"]:
        for medium in MEDIA[1:]:
            rows = [g for g in groups if g["system"] == system and g["medium"] == medium
                    and g["transform"] == "copy" and "mib_s" in g]
            if rows:
                mem = [g for g in groups if g["system"] == system and g["medium"] == "memory" and "mib_s" in g]
                panels.append((system, medium, mem + rows))
    if not panels:
        return "nothing to plot"
    bss = sorted({g["bs"] for _, _, rows in panels for g in rows if g["bs"]})
    script = [f"set terminal pngcairo size 1400,{360 * len(panels)} font ',9'",
              f"set output '{os.path.join(out_dir, 'plot.png')}'",
              "set datafile missing '-'", "set style data histograms",
              "set style histogram clustered gap 1", "set style fill solid 0.8 border -1",
              "set boxwidth 0.9", "set grid ytics", "set ylabel 'MiB/s (median, log scale)'",
              "set logscale y", "set yrange [1:*]",
              "set xtics rotate by -30 left", "set key top right",
              f"set multiplot layout {len(panels)},1 title \"{title}\""]
    for n, (system, medium, rows) in enumerate(panels):
        labels = []
        vals = {}
        for g in rows:
            lab = g["mover"] + (f" qd{g['qd']}" if g["qd"] else "")
            if lab not in labels:
                labels.append(lab)
            for bs in ([g["bs"]] if g["bs"] else bss):   # cp: its own block size, in every cluster
                vals[(lab, bs)] = g["mib_s"]["median"]
        dat = os.path.join(out_dir, f"plot-{system}-{medium}.dat")
        with open(dat, "w") as f:
            f.write("# mover " + " ".join(size_name(b) for b in bss) + "\n")
            for lab in labels:
                f.write('"' + lab + '" ' + " ".join(
                    f"{vals[(lab, b)]:.1f}" if (lab, b) in vals else "-" for b in bss) + "\n")
        acc = rows[0]["accel"]
        # the movers' size per run (memcpy moves BENCH_MEMCPY_MB, a rate)
        per_run = max(g["bytes"] for g in rows)
        script.append(f"set title '{system} ({acc}): {medium}, {size_name(per_run)} per run'")
        cols = ", ".join(f"'{dat}' using {i + 2}:xtic(1) title 'bs {size_name(b)}'" if i == 0
                         else f"'' using {i + 2} title 'bs {size_name(b)}'" for i, b in enumerate(bss))
        script.append("plot " + cols)
    script.append("unset multiplot")
    gpf = os.path.join(out_dir, "plot.gp")
    with open(gpf, "w") as f:
        f.write("\n".join(script) + "\n")
    r = subprocess.run([gp, gpf], capture_output=True, text=True)
    return None if r.returncode == 0 else "gnuplot: " + r.stderr.strip()[:300]


def best(groups, **match):
    """the group with the highest median MiB/s among those matching"""
    c = [g for g in groups if "mib_s" in g and all(g.get(k) == v for k, v in match.items())]
    return max(c, key=lambda g: g["mib_s"]["median"]) if c else None


def summary(groups, kfunc_json):
    """Headline figures per medium and block size (the targets follow, from targets())"""
    out = ["## Summary\n"]
    for medium in MEDIA[1:]:
        for bs in sorted({g["bs"] for g in groups if g["medium"] == medium and g["bs"]}):
            parts = []
            lim = best(groups, medium="memory", bs=bs)
            if lim:
                parts.append(f"memcpy limit {lim['mib_s']['median']:.0f} ({lim['mover']})")
            for mv in ["dd", "fio", "iou-offloadd uring", "iou-offloadd bpf", "iou-offloadd loop"]:
                g = best(groups, medium=medium, bs=bs, mover=mv, transform="copy")
                if g:
                    s = f"{mv} {g['mib_s']['median']:.0f}" + (f" (qd {g['qd']})" if g["qd"] else "")
                    if g.get("io_uring_enter_per_gib") is not None and mv != "dd":
                        s += f", {g['io_uring_enter_per_gib']:.0f} io_uring_enter/GiB"
                    parts.append(s)
            if parts:
                out.append(f"- {medium}, copy, bs {size_name(bs)} (MiB/s, best queue depth): " + "; ".join(parts))
    return "\n".join(out) + "\n"


def durability_medians(dur):
    """{(load, mover): median wall s} from durability.sh's DUR_JSON"""
    med = {}
    for k, v in (dur or {}).get("times_s", {}).items():
        if v:
            load, mover = k.split("/", 1)
            med[(load, mover)] = statistics.median(v)
    return med


def counts_of(g):
    """the exact counts behind a figure, for the targets' notes"""
    if not g:
        return "-"
    parts = []
    for k, name, fmt in [("punts_per_block", "punts/block", "{:.2f}"), ("syscalls_per_gib", "syscalls/GiB", "{:.0f}"),
                         ("io_uring_enter_per_gib", "enters/GiB", "{:.0f}"), ("cqes_per_block", "CQEs/block", "{:.2f}"),
                         ("memcpy_per_byte", "memcpy'd B/B", "{:.3f}"), ("csw_per_gib", "ctx sw/GiB", "{:.0f}")]:
        if g.get(k) is not None:
            parts.append(f"{name} {fmt.format(g[k])}")
    if "user_s_per_gib" in g:
        parts.append(f"CPU {g['user_s_per_gib']:.2f} u + {g['sys_s_per_gib']:.2f} s s/GiB")
    return ", ".join(parts)


def gname(g):
    return f"{g['mover']} {g['transform']} {g['medium']} bs {size_name(g['bs'])}" + (f" qd {g['qd']}" if g["qd"] else "")


def targets(groups, kfunc_json, dur, cpu):
    """Issue 18's targets against what this run measured: one row each, met or missed,
    and the counts behind the figures"""
    rows = []

    def add(target, measured, met, counts=""):
        rows.append((target, measured, "-" if met is None else ("met" if met else "**missed**"), counts))

    # host: what checkpoints cost, and the daemon's default against dd conv=fdatasync
    dm = durability_medians(dur)
    if dm:
        for load in ["quiet", "load"]:
            d, c, dd = dm.get((load, "default")), dm.get((load, "ckpt-1G")), dm.get((load, "dd"))
            cp = dm.get((load, "cp"))
            if d and c:
                add(f"host {load}: default / checkpoint_interval = 1G wall <= 1.05",
                    f"{d / c:.3f} ({d:.3f} s / {c:.3f} s, {dur['mb']} MiB on {dur['fs']})", d / c <= 1.05)
            if d and dd:
                add(f"host {load}: default / dd bs=1M conv=fdatasync wall <= 0.9",
                    f"{d / dd:.3f} ({d:.3f} s / {dd:.3f} s; cp + sync {cp:.3f} s)" if cp else f"{d / dd:.3f}",
                    d / dd <= 0.9)
    else:
        add("host: checkpoints cost <= 5 %, default <= 0.9x dd conv=fdatasync", "not measured (no durability.json)", None)

    # bytes memcpy'd per byte moved
    for g in groups:
        if g["mover"].startswith("iou-offloadd") and g.get("memcpy_per_byte") is not None:
            goal = 0 if g["transform"] in ("copy", "mirror") else 1
            add(f"memcpy'd per byte moved {'=' if goal == 0 else '<='} {goal}: {gname(g)}",
                f"{g['memcpy_per_byte']:.4f} ({g.get('memcpy_bytes', 0):.0f} bytes)",
                g["memcpy_per_byte"] <= goal)

    for medium in MEDIA[1:]:
        for bs in sorted({g["bs"] for g in groups if g["medium"] == medium and g["bs"]}):
            eng = [g for g in groups if g["medium"] == medium and g["bs"] == bs and g["mover"].startswith("iou-offloadd")]
            if not eng:
                continue
            where = f"{medium} bs {size_name(bs)}"
            # against the peers
            be = best(groups, medium=medium, bs=bs, transform="copy", mover="iou-offloadd uring")
            for e in ["iou-offloadd bpf", "iou-offloadd loop"]:
                b = best(groups, medium=medium, bs=bs, transform="copy", mover=e)
                if b and (not be or b["mib_s"]["median"] > be["mib_s"]["median"]):
                    be = b
            f = best(groups, medium=medium, bs=bs, transform="copy", mover="fio")
            d = best(groups, medium=medium, bs=bs, transform="copy", mover="dd")
            if be and f:
                r = be["mib_s"]["median"] / f["mib_s"]["median"]
                add(f"{where}: best engine on copy >= 1.2x fio at fio's best depth",
                    f"{r:.2f} ({be['mover']} qd {be['qd']} {be['mib_s']['median']:.0f} / fio qd {f['qd']} "
                    f"{f['mib_s']['median']:.0f} MiB/s)", r >= 1.2,
                    f"{be['mover']}: {counts_of(be)}; fio: {counts_of(f)}")
            if be and d:
                r = be["mib_s"]["median"] / d["mib_s"]["median"]
                add(f"{where}: best engine on copy >= dd" + (" iflag=direct oflag=direct" if medium != "tmpfs" else ""),
                    f"{r:.2f} ({be['mib_s']['median']:.0f} / {d['mib_s']['median']:.0f} MiB/s)", r >= 1.0,
                    f"dd: {counts_of(d)}")
            # checksum = crc32c against the same transform without (issue 32's targets)
            for tf in [t for t in TRANSFORMS if t.endswith("-sum")]:
                for qd in sorted({g["qd"] for g in eng}):
                    for e in ["uring", "bpf", "loop"]:
                        on, off = (next((x for x in eng if x["mover"] == f"iou-offloadd {e}"
                                         and x["transform"] == t and x["qd"] == qd and "mib_s" in x), None)
                                   for t in [tf, tf[:-len("-sum")]])
                        if not on or not off:
                            continue
                        r = on["mib_s"]["median"] / off["mib_s"]["median"]
                        goal = 0.90 if e == "uring" else 0.95
                        add(f"{where} qd {qd}: {e}: checksum = crc32c / none MiB/s on {tf[:-4]} >= {goal}",
                            f"{r:.2f} ({on['mib_s']['median']:.0f} / {off['mib_s']['median']:.0f})",
                            r >= goal, f"with: {counts_of(on)}; without: {counts_of(off)}")
            # the offload never loses
            for tf in TRANSFORMS:
                for qd in sorted({g["qd"] for g in eng}):
                    u = next((g for g in eng if g["mover"] == "iou-offloadd uring" and g["transform"] == tf
                              and g["qd"] == qd and "mib_s" in g), None)
                    if not u:
                        continue
                    for e in ["bpf", "loop"]:
                        g = next((x for x in eng if x["mover"] == f"iou-offloadd {e}" and x["transform"] == tf
                                  and x["qd"] == qd and "mib_s" in x), None)
                        if not g:
                            continue
                        r = g["mib_s"]["median"] / u["mib_s"]["median"]
                        goal = 1.3 if tf.endswith("stripe-multi") and e == "bpf" else 1.0
                        what = ("the gather by IORING_OP_BPF vs in userspace" if goal == 1.3 else "the offload never loses")
                        add(f"{where} qd {qd}: {e} / uring MiB/s on {tf} >= {goal} ({what})",
                            f"{r:.2f} ({g['mib_s']['median']:.0f} / {u['mib_s']['median']:.0f})", r >= goal,
                            f"{e}: {counts_of(g)}; uring: {counts_of(u)}")
                    # the two ways of a multi-unit (de)stripe, per engine: the default follows the faster
                    if tf.endswith("stripe-perunit"):
                        way = tf[:-len("-perunit")]
                        for e in ["uring", "bpf", "loop"]:
                            pu, ga = (next((x for x in eng if x["mover"] == f"iou-offloadd {e}"
                                            and x["transform"] == t and x["qd"] == qd and "mib_s" in x), None)
                                      for t in [tf, way + "-multi"])
                            if pu and ga:
                                r = pu["mib_s"]["median"] / ga["mib_s"]["median"]
                                add(f"{where} qd {qd}: {e}: per-unit I/O / gather MiB/s on the multi-unit {way}",
                                    f"{r:.2f} ({pu['mib_s']['median']:.0f} / {ga['mib_s']['median']:.0f})", None,
                                    f"per-unit: {counts_of(pu)}; gather: {counts_of(ga)}")
                    lp = next((x for x in eng if x["mover"] == "iou-offloadd loop" and x["transform"] == tf
                               and x["qd"] == qd and "user_s_per_gib" in x), None)
                    if lp and "user_s_per_gib" in u:
                        cl = lp["user_s_per_gib"] + lp["sys_s_per_gib"]
                        cu = u["user_s_per_gib"] + u["sys_s_per_gib"]
                        m = f"{cl / cu:.2f} ({cl:.2f} / {cu:.2f} s/GiB)" if cu else "-"
                        if lp.get("net_cpu_s_per_gib") is not None and u.get("net_cpu_s_per_gib"):
                            m += (f"; net of start-up {lp['net_cpu_s_per_gib'] / u['net_cpu_s_per_gib']:.2f} "
                                  f"({lp['net_cpu_s_per_gib']:.2f} / {u['net_cpu_s_per_gib']:.2f})")
                        add(f"{where} qd {qd}: loop / uring CPU s/GiB on {tf} <= 0.7", m, cu > 0 and cl / cu <= 0.7,
                            f"loop: {counts_of(lp)}; uring: {counts_of(u)}")
                        if lp.get("syscalls_per_gib") is not None and u.get("syscalls_per_gib"):
                            r = lp["syscalls_per_gib"] / u["syscalls_per_gib"]
                            m = f"{r:.3f} ({lp['syscalls_per_gib']:.0f} / {u['syscalls_per_gib']:.0f})"
                            if lp.get("net_syscalls_per_gib") is not None and u.get("net_syscalls_per_gib"):
                                m += (f"; net of start-up {lp['net_syscalls_per_gib'] / u['net_syscalls_per_gib']:.3f} "
                                      f"({lp['net_syscalls_per_gib']:.0f} / {u['net_syscalls_per_gib']:.0f})")
                            add(f"{where} qd {qd}: loop / uring system calls per GiB on {tf} <= 0.01", m, r <= 0.01)
            # start-up
            for e in ["uring", "bpf", "loop"]:
                st = [g for g in eng if g["mover"] == f"iou-offloadd {e}" and "startup_s" in g]
                if st:
                    w = max(st, key=lambda g: g["startup_s"])
                    add(f"{where}: start-up (one-block run) <= 0.15 s, engine {e}",
                        f"worst {w['startup_s']:.3f} s ({w['transform']}), best "
                        f"{min(g['startup_s'] for g in st):.3f} s", w["startup_s"] <= 0.15)
    if kfunc_json:
        k = {(x["path"], x["size"], x["method"]): x["mib_s_median"] for x in kfunc_json["results"]}
        for size in [64 << 10, 1 << 20]:
            for p in ["FIXED->FIXED", "FIXED->REG_VEC"]:
                kf, mc = k.get((p, size, "kfunc")), k.get((p, size, "memcpy"))
                if kf and mc:
                    add(f"uring_bpf_memcpy() / memcpy() >= 0.95, {p} {size_name(size)} (-cpu {cpu or '?'})",
                        f"{kf / mc:.2f} ({kf:.0f} / {mc:.0f} MiB/s)", kf / mc >= 0.95)
    out = ["\n## Targets (issue 18)\n",
           "Guest figures are emulated (TCG, -cpu " + (cpu or "?") + "): ratios within this run and exact counts. "
           "The kfunc target asks for both -cpu max and -cpu max,-erms: this boot measured one "
           "(BENCH_CPU picks it; make bench-kfunc runs both).\n",
           "| target | measured | | counts behind it |", "| --- | --- | --- | --- |"]
    for t, m, v, c in rows:
        out.append(f"| {t} | {m} | {v} | {c} |")
    return "\n".join(out) + "\n"


def cmd_merge(a):
    guest = load([os.path.join(a.guest, "raw.jsonl")] if a.guest else [])
    host = load([os.path.join(a.host, "raw.jsonl")] if a.host else [])
    gg = [g for g in summarize(guest) if g["system"] == "guest"]
    hg = [g for g in summarize(host) if g["system"] == "host"]
    # host-only configurations (none expected) are listed after the guest's
    accel = gg[0]["accel"] if gg else "?"
    os.makedirs(a.out, exist_ok=True)
    md = [f"# iou-offload bench\n",
          f"Guest: -cpu {a.cpu or '?'}; media: {', '.join(sorted({g['medium'] for g in gg if g['medium'] != 'memory'}))}; "
          f"{size_name(max([g['bytes'] for g in gg if g['medium'] != 'memory'] or [0]))} per run.\n",
          f"Guest accelerator: **{accel}**" + (" (everything in the guest is emulated: compare guest "
                                                "figures as ratios within the run, and counts exactly)" if accel == "tcg" else "")
          + f"; host columns: the host's own kernel ({hg[0]['accel'] + ' guest' if hg and hg[0]['accel'] != 'none' else 'bare metal' if hg else '-'}), "
          "unemulated, tmpfs, no BPF.\n",
          "MiB/s: median [min, max] of the timed runs, wall time of the whole command (startup included; "
          "startup s: the same command moving one block; net MiB/s: the rest of the data over the rest of the "
          "time, shown where startup is under 80 % of the run). "
          "CPU: user / system seconds per GiB moved. x fio: against fio (io_uring, fixedbufs) at the same medium, "
          "block size and queue depth (1 for movers without one); x uring: against iou-offloadd engine = uring.\n"]
    kjson = None
    if a.kfunc and os.path.exists(os.path.join(a.kfunc, "kfunc.json")):
        with open(os.path.join(a.kfunc, "kfunc.json")) as f:
            kjson = json.load(f)
    dur = None
    if a.host and os.path.exists(os.path.join(a.host, "durability.json")):
        with open(os.path.join(a.host, "durability.json")) as f:
            dur = json.load(f)
    md.append(summary(gg, kjson))
    md.append(targets(gg, kjson, dur, a.cpu))
    if dur:
        dm = durability_medians(dur)
        movers = [m for m in ["default", "ckpt-1G", "dd", "cp"] if any(k[1] == m for k in dm)]
        md.append(f"\n## Host durability (durability.sh, {dur['mb']} MiB on {dur['fs']}, {dur['kernel']}, "
                  f"median wall s of {dur['runs']}; load: {dur['load_cpus']} CPU burners + a dd conv=fdatasync "
                  "writer)\n")
        md.append("| load | " + " | ".join(movers) + " | default / ckpt-1G | default / dd |")
        md.append("| --- |" + " ---: |" * (len(movers) + 2))
        for ld in ["quiet", "load"]:
            if not any(k[0] == ld for k in dm):
                continue
            v = [dm.get((ld, m)) for m in movers]
            d, c, dd = dm.get((ld, "default")), dm.get((ld, "ckpt-1G")), dm.get((ld, "dd"))
            md.append(f"| {ld} | " + " | ".join("-" if x is None else f"{x:.3f}" for x in v) + " | "
                      + (f"{d / c:.3f}" if d and c else "-") + " | " + (f"{d / dd:.3f}" if d and dd else "-") + " |")
        md.append("")
    md.append("\n## Every configuration\n")
    md.append(table(gg, hg if host else None))
    kfunc = None
    if a.kfunc and os.path.exists(os.path.join(a.kfunc, "table.md")):
        with open(os.path.join(a.kfunc, "table.md")) as f:
            kfunc = f.read()
        md.append("\n## uring_bpf_memcpy() micro-benchmark (same boot)\n\n" + kfunc)
    err = plot(gg + hg, a.out, f"iou-offload bench: guest {accel} vs host")
    md.append("\n![MiB/s by mover and block size](plot.png)\n" if err is None else f"\n(no plot: {err})\n")
    text = "\n".join(md)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"accelerator": accel, "cpu": a.cpu, "guest": gg, "host": hg, "kfunc": kjson,
                   "host_durability": dur, "raw": guest + host}, f, indent=1)
    print(text)
    if err:
        print(f"report: no plot: {err}", file=sys.stderr)


def cmd_scale(a):
    """Scaling table: per engine, pipelines and size, time and CPU per GiB, and
    how they grow against the smallest size (same engine and pipelines) and
    against one pipeline (same engine and size)"""
    recs = [r for r in load(a.raw) if "pipelines" in r]
    groups = {}
    startup = {}
    for r in recs:
        if r.get("kind") == "startup":
            if r["rc"] == 0 and r.get("verified"):
                startup[(r["engine"], int(r["pipelines"]))] = r
            continue
        groups.setdefault((r["engine"], int(r["pipelines"]), int(r["bytes"])), []).append(r)
    rows = {}
    for k, rs in groups.items():
        good = [r for r in rs if r["rc"] == 0 and r["wall_s"] > 0 and r.get("verified")]
        g = {"engine": k[0], "pipelines": k[1], "bytes": k[2], "runs": len(good), "failed": len(rs) - len(good),
             "accel": rs[0]["accel"]}
        if good:
            gib = k[2] / GIB
            med = lambda f: statistics.median([f(r) for r in good])
            g["wall_s_per_gib"] = med(lambda r: r["wall_s"] / gib)
            g["mib_s"] = med(lambda r: r["bytes"] / r["wall_s"] / MIB)
            g["user_s_per_gib"] = med(lambda r: r["user_s"] / gib)
            g["sys_s_per_gib"] = med(lambda r: r["sys_s"] / gib)
            g["cpu_s_per_gib"] = g["user_s_per_gib"] + g["sys_s_per_gib"]
            st = startup.get((k[0], k[1]))
            if st:
                # the fixed cost taken out: what each further GiB costs
                g["startup_s"] = st["wall_s"]
                g["startup_cpu_s"] = st["user_s"] + st["sys_s"]
                g["net_wall_s_per_gib"] = med(lambda r: (r["wall_s"] - st["wall_s"]) / gib)
                g["net_cpu_s_per_gib"] = med(lambda r: (r["user_s"] + r["sys_s"] - g["startup_cpu_s"]) / gib)
            if all(r["io_uring_enter"] >= 0 for r in good):
                g["io_uring_enter_per_gib"] = med(lambda r: r["io_uring_enter"] / gib)
                g["syscalls_per_gib"] = med(lambda r: r["syscalls"] / gib)
        rows[k] = g
    engines = [e for e in ["uring", "bpf", "loop"] if any(k[0] == e for k in rows)] + \
        sorted({k[0] for k in rows} - {"uring", "bpf", "loop"})
    sizes = sorted({k[2] for k in rows})
    nps = sorted({k[1] for k in rows})
    # growth on the net figures where the startup run is there, else the whole run's
    cpu_k = "net_cpu_s_per_gib" if all("net_cpu_s_per_gib" in g for g in rows.values() if "mib_s" in g) \
        else "cpu_s_per_gib"
    wall_k = "net_wall_s_per_gib" if cpu_k.startswith("net") else "wall_s_per_gib"
    for g in rows.values():
        base = rows.get((g["engine"], g["pipelines"], sizes[0]))
        if base and cpu_k in g and base.get(cpu_k, 0) > 0 and base.get(wall_k, 0) > 0:
            g["cpu_vs_smallest"] = g[cpu_k] / base[cpu_k]
            g["wall_vs_smallest"] = g[wall_k] / base[wall_k]
        one = rows.get((g["engine"], nps[0], g["bytes"]))
        if one and cpu_k in g and one.get(cpu_k, 0) > 0 and one.get(wall_k, 0) > 0:
            g["cpu_vs_one"] = g[cpu_k] / one[cpu_k]
            g["wall_vs_one"] = g[wall_k] / one[wall_k]
    accel = next(iter(rows.values()))["accel"] if rows else "?"
    net = "net " if cpu_k.startswith("net") else ""
    s0 = size_name(sizes[0]) if sizes else "-"
    n0 = nps[0] if nps else "-"
    head = ["engine", "pipelines", "size", "MiB/s", "wall s/GiB", "CPU s/GiB user / sys", "CPU s/GiB",
            "startup s (CPU s)", "net wall s/GiB", "net CPU s/GiB",
            f"{net}CPU/GiB x {s0}", f"{net}wall/GiB x {s0}",
            f"{net}CPU/GiB x {n0} pipeline", f"{net}wall/GiB x {n0} pipeline",
            "io_uring_enter /GiB", "syscalls /GiB", "runs ok / failed"]
    md = [f"Scaling, accelerator {accel}: one daemon, N pipelines splitting the size, copy, "
          "virtio scratch disk, O_DIRECT. startup: the same daemon moving one block per pipeline; "
          "net: the run less that fixed cost, per GiB. x columns: the " + (net or "whole ") +
          "per-GiB figure over the same engine's at the smallest size (same N), and at one pipeline "
          "(same size).\n",
          "| " + " | ".join(head) + " |", "|" + "|".join([" --- "] * 3 + [" ---: "] * (len(head) - 3)) + "|"]
    for e in engines:
        for np_ in nps:
            for b in sizes:
                g = rows.get((e, np_, b))
                if not g:
                    continue
                f2 = lambda k, fmt="{:.2f}": fmt.format(g[k]) if k in g else "-"
                md.append("| " + " | ".join([
                    e, str(np_), size_name(b), f2("mib_s", "{:.0f}"), f2("wall_s_per_gib"),
                    (f"{g['user_s_per_gib']:.2f} / {g['sys_s_per_gib']:.2f}" if "user_s_per_gib" in g else "-"),
                    f2("cpu_s_per_gib"),
                    (f"{g['startup_s']:.2f} ({g['startup_cpu_s']:.2f})" if "startup_s" in g else "-"),
                    f2("net_wall_s_per_gib"), f2("net_cpu_s_per_gib"),
                    f2("cpu_vs_smallest"), f2("wall_vs_smallest"), f2("cpu_vs_one"),
                    f2("wall_vs_one"), f2("io_uring_enter_per_gib", "{:.1f}"), f2("syscalls_per_gib", "{:.0f}"),
                    f"{g['runs']} / {g['failed']}"]) + " |")
    text = "\n".join(md) + "\n"
    with open(a.md, "w") as f:
        f.write(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"accelerator": accel, "rows": list(rows.values()), "raw": recs}, f, indent=1)
    sys.stdout.write(text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summarize")
    s.add_argument("--raw", nargs="+", required=True)
    s.add_argument("--md", required=True)
    s.add_argument("--json", required=True)
    s.add_argument("--tap-lines")
    m = sub.add_parser("merge")
    m.add_argument("--guest")
    m.add_argument("--host")
    m.add_argument("--kfunc")
    m.add_argument("--cpu", help="the guest's TCG -cpu model (shown with the figures)")
    m.add_argument("--out", required=True)
    c = sub.add_parser("scale")
    c.add_argument("--raw", nargs="+", required=True)
    c.add_argument("--md", required=True)
    c.add_argument("--json")
    a = p.parse_args()
    {"summarize": cmd_summarize, "merge": cmd_merge, "scale": cmd_scale}[a.cmd](a)


if __name__ == "__main__":
    main()
