# The daemon's sources but main.c and the BPF loader (real or stub): the one
# list, included by daemon/Makefile and tests/unit/Makefile.
DAEMON_LIB_SRCS := log.c claims.c config.c config_keys.c config_load.c config_values.c \
		   config_check.c config_device.c \
		   pipeline_config.c plan.c ring.c bufpool.c checkpoint.c kv.c files.c files_space.c \
		   files_limits.c \
		   engine.c engine_uring.c engine_bpf.c engine_loop.c loop_monitor.c \
		   loop_templates.c pipeline.c pipeline_setup.c pipeline_status.c durability.c sparse.c sums.c checksum.c verify.c chain.c driver.c \
		   notify.c human.c status.c status_device.c workers.c daemon_dirs.c rlimits.c daemon.c oneshot.c \
		   ublk_map.c ublk_gather.c ublk_ctrl.c ublk_queue.c ublk_recover.c ublk_member.c ublk_mirror.c ublk_scrub.c scrub_request.c ublk_dirty.c ublk_meta.c ublk_sums.c full_io.c ublk_dev.c devices.c reload.c
# what the config parser needs on its own (the fuzzer links just these)
DAEMON_CONFIG_SRCS := log.c claims.c kv.c config.c config_keys.c config_load.c config_values.c \
		      config_check.c config_device.c \
		      pipeline_config.c plan.c
# the real BPF loader (BPF=1; bpf_loader_stub.c otherwise), also linked by
# tests/integration/faults' hostile, against a copy of libbpf.a made with
# libbpf-iou.sh (bpf_btf.c: libbpf's loads share one parse of the kernel BTF)
DAEMON_BPF_SRCS := bpf_loader.c bpf_struct_ops.c bpf_btf.c
