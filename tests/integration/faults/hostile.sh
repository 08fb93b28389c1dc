#!/bin/bash
# Guest suite hostile: privilege and hostile input against the kernel side,
# while iou-offloadd runs a pipeline under systemd.
#  - an unprivileged process (nobody) with IORING_OP_BPF on its own ring and
#    crafted descriptors gets errnos and never the daemon's bytes (./hostile);
#  - nobody cannot attach struct_ops, reach the daemon's ring, or read its
#    state directory (0700);
#  - the daemon runs with CapEff = CAP_BPF + CAP_PERFMON, and each of the two
#    is needed (the bpf engine fails without it).
set -u
cd "$(dirname "$0")" && . ./common.sh

H=/srv/iou-offload/hostile
MiB=1048576
MARKER=IOU-DAEMON-SECRET-7f3a
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all"
systemctl stop iou-offloadd 2>/dev/null
rm -rf "$H" "$CKDIR"/*.ckpt
mkdir -p "$H"
cp /etc/iou-offloadd.conf "$ART/default.conf"
# the daemon's source: a marker pattern that must never show up in nobody's memory
yes "$MARKER" | head -c $((64 * MiB)) > "$H/src"

sysconf "[pipeline secret]
	transform = copy
	queue_depth = 2
	block_size = 64K
	checkpoint_interval = 1M
	source = $H/src
	destination = $H/out"
check "the daemon runs a pipeline (systemctl start)" systemctl start iou-offloadd
wait_bytes secret $((1 * MiB)) 120
PID=$(systemctl show -p MainPID --value iou-offloadd)
RINGFD=
ls -l /proc/"$PID"/fd/ > "$ART/daemon-fds.txt" 2>&1
RINGFD=$(awk '/io_uring/ { print $9; exit }' "$ART/daemon-fds.txt")
note "daemon pid $PID, ring fd ${RINGFD:-?}, state $(st $STATUS secret state), $(st $STATUS secret bytes_done) bytes done"

# ---- capabilities of the running daemon ----
capnames=(chown dac_override dac_read_search fowner fsetid kill setgid setuid setpcap
	linux_immutable net_bind_service net_broadcast net_admin net_raw ipc_lock ipc_owner
	sys_module sys_rawio sys_chroot sys_ptrace sys_pacct sys_admin sys_boot sys_nice
	sys_resource sys_time sys_tty_config mknod lease audit_write audit_control setfcap
	mac_override mac_admin syslog wake_alarm block_suspend audit_read perfmon bpf
	checkpoint_restore)
decode() {	# hex mask -> names
	local m=$((16#$1)) out= i
	for i in "${!capnames[@]}"; do
		(( (m >> i) & 1 )) && out="$out cap_${capnames[$i]}"
	done
	echo "${out:- none}"
}
grep '^Cap' /proc/"$PID"/status > "$ART/daemon-caps.txt"
for k in CapInh CapPrm CapEff CapBnd CapAmb; do
	v=$(sed -n "s/^$k:[[:space:]]*//p" /proc/"$PID"/status)
	note "daemon $k $v:$(decode "$v")"
	eval "cap_$k=$v"
done
check "daemon CapEff is exactly CAP_BPF + CAP_PERFMON ($(decode "$cap_CapEff"))" \
	[ "$((16#$cap_CapEff))" -eq $(((1 << 38) | (1 << 39))) ]
check "daemon bounding set is the same two (no way back to more)" \
	[ "$((16#$cap_CapBnd))" -eq $(((1 << 38) | (1 << 39))) ]
note "why: CAP_BPF: load BTF, create the struct_ops maps, load the programs and link them (bpf())"
note "why: CAP_PERFMON: struct_ops programs count as tracing-class for the verifier (pointer"
note "     arithmetic, bpf_probe_read_user() of the descriptor array in issue_fn)"
note "not needed: CAP_IPC_LOCK (LimitMEMLOCK= covers the fixed buffers), CAP_SYS_ADMIN, CAP_DAC_OVERRIDE"

# ---- nobody against the kernel side ----
if [ -x ./hostile ]; then
	./hostile "$MARKER" "$PID" "${RINGFD:-0}" > "$ART/hostile.txt" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		PASS\ *) ok "nobody: ${line#PASS }" ;;
		FAIL\ *) nok "nobody: ${line#FAIL }" ;;
		*) note "$line" ;;
		esac
	done < "$ART/hostile.txt"
	check "hostile exits 0" [ $rc -eq 0 ]
else
	skip "nobody: IORING_OP_BPF with crafted descriptors" "hostile not built (daemon built with BPF=0)"
fi
if command -v bpftool >/dev/null; then
	$NOBODY bpftool struct_ops register /dev/null > "$ART/nobody-bpftool.txt" 2>&1
	$NOBODY bpftool struct_ops list >> "$ART/nobody-bpftool.txt" 2>&1
	check "nobody: bpftool struct_ops list is refused (EPERM)" \
		grep -qi "operation not permitted" "$ART/nobody-bpftool.txt"
fi

# ---- the state directory ----
check "state dir $CKDIR is mode 0700 root" [ "$(stat -c %a:%u "$CKDIR")" = "700:0" ]
check "nobody cannot list the state dir" eval "! $NOBODY ls $CKDIR >/dev/null 2>&1"
check "nobody cannot read a checkpoint" eval "! $NOBODY cat $CKDIR/secret.ckpt >/dev/null 2>&1"

# ---- the daemon came through it all ----
if wait_state secret finished 600; then ok "the daemon's pipeline finishes"; else nok "the daemon's pipeline finishes (state $(st $STATUS secret state): $(st $STATUS secret error))"; fi
check "the daemon's destination is byte-identical (its buffers were not touched)" same "$H/src" "$H/out"
check "the daemon counted no errors" [ "$(st $STATUS secret errors)" = 0 ]
systemctl stop iou-offloadd

# ---- fewest capabilities that work: drop either and the bpf engine fails ----
# (a multi-unit stripe with stripe_io = gather: IORING_OP_BPF gathers its
# blocks, so the programs must load; a copy loads none, below)
mkdir -p "$H/caps/state" "$H/caps/run"
head -c $((4 * MiB)) /dev/urandom > "$H/caps/src"
sed 's/^[[:space:]]*//' > "$H/caps.conf" <<-EOF
	[daemon]
	state_dir = $H/caps/state
	runtime_dir = $H/caps/run
	engine = bpf
	repeat = yes
	[pipeline caps]
	transform = stripe
	stripe_unit = 64K
	stripe_io = gather
	source = $H/caps/src
	destination = $H/caps/out0
	destination = $H/caps/out1
EOF
sed -e 's/^transform = stripe$/transform = copy/' -e '/^stripe_unit/d' -e '/^stripe_io/d' \
	-e '/out1$/d' -e 's/out0$/out/' "$H/caps.conf" > "$H/caps-copy.conf"
caprun() {	# NAME CAPS...: the daemon under systemd-run with only CAPS ($CONF: another config)
	local name=$1 conf=${CONF:-$H/caps.conf}; shift
	systemd-run --quiet --wait --collect --unit="iou-caps-$name" \
		-p CapabilityBoundingSet="$*" -p LimitMEMLOCK=infinity -p NoNewPrivileges=yes \
		-p SecureBits=noroot-locked -p StandardOutput=journal \
		"$BIN" -c "$conf" --once -l info
}
check "bpf engine works with CAP_BPF CAP_PERFMON alone" caprun both CAP_BPF CAP_PERFMON
check "bpf engine fails without CAP_PERFMON (CAP_BPF alone)" eval '! caprun bpf CAP_BPF'
check "bpf engine fails without CAP_BPF (CAP_PERFMON alone)" eval '! caprun perfmon CAP_PERFMON'
check "bpf engine fails with no capabilities" eval '! caprun none ""'
check "a copy with engine = bpf runs with no capabilities: it shuffles nothing, so loads nothing" \
	eval 'CONF="$H/caps-copy.conf" caprun copy-none "" && same "$H/caps/src" "$H/caps/out"'
journalctl --no-pager -o cat -u 'iou-caps-*' > "$ART/caps-journal.txt" 2>&1
grep -h "failed\|attach\|EPERM\|permitted" "$ART/caps-journal.txt" | head -8 | sed 's/^/# /'

cp "$ART/default.conf" /etc/iou-offloadd.conf
plan
