/* SPDX-License-Identifier: MIT */
/* What kfunc_bench.bpf.c and its driver kfunc_bench.c agree on. */
#ifndef KFUNC_BENCH_H
#define KFUNC_BENCH_H

/* copies per IORING_OP_BPF request at most (sqe->len); bounds the BPF loop */
#define KB_MAX_REPS	64

#endif
