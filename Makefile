# kiln: the one build entry point.
#   make          build kiln-vmm, kiln-init, the guest kernel and the rootfs
#   make test     install what is missing, build, run unit (+ fuzz corpus replay) + integration tests
#   make fuzz     run every libFuzzer target FUZZ_SECONDS (60) each (make fuzz-<name>: one)
#   make demo     boot a guest and print its boot timeline; then a sandbox
#                 through kilnd: create, exec, rm, with timings
#   make bench    boot and device benchmarks beside QEMU -M microvm, the
#                 agent's exec latency and file throughput, and kilnd's
#                 create-to-ready and API exec round trip, and checkpoint,
#                 restore and fork beside a cold boot, and guest<->host TCP
#                 with the packet filter off and on (make bench-boot,
#                 bench-devices, bench-agent, bench-api, bench-snapshot,
#                 bench-net)
#   make image-debian  the Debian guest image (minutes cold; not in `all`)
#   make test-debian   build it and run its test (kiln run debian -- python3 ...)
CC ?= gcc
BUILD := build
WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -D_GNU_SOURCE $(WARN) -MMD -MP -I.
LIBS :=
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# The VMM core (libkiln's VM half): vmm/ less the kiln-vmm program, its
# devices, and the shared modules they stand on (docs/architecture.md).
VMM_LIB_SRCS := $(wildcard vmm/core/*.c vmm/boot/*.c vmm/snapshot/*.c vmm/control/*.c) \
	$(wildcard devices/*/*.c) $(wildcard lib/guest/*.c lib/netrules/*.c) lib/base/error.c
VMM_LIB_OBJS := $(VMM_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# kiln-init's agent server, processes, reaper and network settings.
# INIT_PURE_SRCS are unit-tested too.
INIT_PURE_SRCS := guest-init/agent/agent_env.c guest-init/sys/netconf_params.c
INIT_AGENT_SRCS := $(INIT_PURE_SRCS) guest-init/agent/agent.c guest-init/agent/agent_exec.c \
	guest-init/agent/agent_stream.c guest-init/agent/agent_lifecycle.c guest-init/agent/agent_proc.c \
	guest-init/agent/agent_launch.c guest-init/sys/reaper.c guest-init/sys/child.c \
	guest-init/sys/milestone.c guest-init/sys/shutdown.c guest-init/sys/say.c guest-init/sys/netconf.c
# The file requests (docs/agent-protocol.md, 7.5); unit-tested in a scratch
# directory (tests/unit/test_agent_files.c).
INIT_FILES_SRCS := guest-init/agent/agent_files.c guest-init/agent/agent_fs.c guest-init/agent/agent_walk.c \
	guest-init/agent/agent_list.c guest-init/agent/agent_remove.c guest-init/agent/agent_tar_io.c
# The tcp_connect bridge and the byte relay it shares with kilnd's port
# forwarding; unit-tested over real sockets.
INIT_TCP_SRCS := guest-init/agent/agent_tcp.c lib/base/sock_relay.c
INIT_SRCS := guest-init/init.c guest-init/sys/params.c api/proto/agent_proto.c \
	guest-init/agent/agent_conn.c $(INIT_TCP_SRCS) \
	api/proto/agent_tar.c \
	$(INIT_FILES_SRCS) \
	guest-init/agent/agent_ring.c \
	$(INIT_AGENT_SRCS)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))

KERNEL := $(BUILD)/kernel/bzImage
VMLINUX := $(BUILD)/kernel/vmlinux
ROOTFS := $(BUILD)/rootfs/minimal.cpio
TEST_ROOTFS := $(BUILD)/rootfs/minimal-test.cpio

.PHONY: all layers deps kernel rootfs test test-debian unit integration demo bench bench-boot bench-devices bench-agent bench-api bench-snapshot bench-net clean
all: layers $(BUILD)/kiln-vmm $(BUILD)/kiln-init $(BUILD)/kiln-agent $(BUILD)/kilnd $(BUILD)/kiln kernel rootfs

deps:
	@scripts/install-deps

# Every #include points down the folder map (docs/architecture.md,
# "Folders"): a forbidden one fails the build here.
layers:
	@scripts/check-layers

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libkiln-vmm.a: $(VMM_LIB_OBJS)
	$(AR) rcs $@ $^

$(BUILD)/kiln-vmm: $(BUILD)/obj/vmm/kiln-vmm/main.o $(BUILD)/libkiln-vmm.a
	$(CC) $(CFLAGS) -o $@ $^ -lz -ljansson -lpthread $(LIBS)

# PID 1 of the guest: static, so the rootfs needs no libc (jansson comes
# from libjansson-dev's static archive).
$(BUILD)/kiln-init: $(INIT_SRCS) $(wildcard guest-init/*.h guest-init/agent/*.h api/proto/*.h lib/base/*.h)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -static -o $@ $(INIT_SRCS) -ljansson

# Host-side agent client CLI (api/): links the guest's protocol layer so
# both ends share one framer and parser.
AGENT_CLIENT_SRCS := $(wildcard api/agent-client/*.c)
AGENT_CLI_SRCS := api/kiln-agent/kiln-agent.c $(AGENT_CLIENT_SRCS) api/proto/agent_proto.c
$(BUILD)/kiln-agent: $(AGENT_CLI_SRCS) $(wildcard api/agent-client/*.h) api/proto/agent_proto.h
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ $(AGENT_CLI_SRCS) -ljansson

# kilnd, the daemon (docs/api.md). Its pure modules are unit-tested too
# the rest is libmicrohttpd, processes and sockets.
KILND_PURE_SRCS := api/kilnd/api_error.c api/kilnd/byte_queue.c api/kilnd/exec_render.c api/kilnd/exec_spec.c \
	api/kilnd/json_fields.c api/kilnd/metrics.c api/kilnd/names.c api/kilnd/query.c api/kilnd/route.c \
	api/kilnd/sandbox_record.c api/kilnd/sandbox_spec.c api/kilnd/sandbox_state.c lib/base/text_codec.c \
	api/kilnd/vmm_argv.c api/kilnd/vmm_output.c api/kilnd/files_spec.c api/proto/gz_stream.c
# Background processes and the tty stream (docs/api.md, "Processes").
KILND_PURE_SRCS += api/kilnd/proc_spec.c api/kilnd/proc_render.c api/kilnd/tty_escape.c
# Snapshots (docs/api.md, "Pause, checkpoints, forks, hibernation"): the
# control socket client is tested against a fake kiln-vmm.
KILND_PURE_SRCS += api/kilnd/checkpoint.c api/kilnd/vmm_control.c api/kilnd/vmm_control_reply.c
# Networking (docs/api.md, "Networking and firewall"): rule sets are
# validated by the VMM's own parser (lib/netrules/net_rules.c).
KILND_PURE_SRCS += api/kilnd/firewall_spec.c
KILND_SRCS := $(KILND_PURE_SRCS) api/kilnd/kilnd.c api/kilnd/http.c api/kilnd/listen.c api/kilnd/images.c \
	api/kilnd/sandbox.c api/kilnd/sandboxes.c api/kilnd/sandbox_vmm.c api/kilnd/sandbox_store.c api/kilnd/supervise.c \
	api/kilnd/handle_sandboxes.c api/kilnd/handle_exec.c \
	api/kilnd/handle_files.c api/kilnd/handle_misc.c $(AGENT_CLIENT_SRCS) api/proto/agent_proto.c
KILND_SRCS += api/kilnd/handle_procs.c api/kilnd/handle_proc_output.c api/kilnd/handle_tty.c
KILND_SRCS += api/kilnd/stream_job.c api/kilnd/handle_fs.c api/kilnd/handle_archive.c api/kilnd/handle_ports.c api/kilnd/port_fwd.c api/kilnd/sandbox_ports.c
KILND_SRCS += lib/base/sock_relay.c
KILND_SRCS += api/kilnd/sandbox_snap.c api/kilnd/sandbox_fork.c api/kilnd/handle_snapshots.c
KILND_SRCS += api/kilnd/sandbox_firewall.c api/kilnd/handle_firewall.c lib/netrules/net_rules.c lib/netrules/net_addr.c
$(BUILD)/kilnd: $(KILND_SRCS:%.c=$(BUILD)/obj/%.o)
	$(CC) $(CFLAGS) -o $@ $^ -lmicrohttpd -ljansson -lz -lpthread

# kiln, the CLI (README "kiln CLI"): a libcurl client of kilnd's socket.
# Its pure parts (options, request bodies, errors, output) are unit-tested
# too (tests/unit/test_kiln_cli*.c).
KILN_CLI_PURE_SRCS := api/kiln/cli_opts.c api/kiln/cli_body.c api/kiln/cli_error.c api/kiln/cli_exec_out.c api/kiln/cli_format.c
# The tty stream's request and escape, the process/fs/port command lines,
# and the directory archives of cp (tested in a scratch directory; the tar
# format is the agent's api/proto/agent_tar.c, gzip is api/proto/gz_stream.c),
# and the whole writes (cli_io.c) that extraction shares with the commands.
KILN_CLI_PURE_SRCS += api/kiln/cli_tty.c api/kiln/cli_body_proc.c api/kiln/cli_body_fs.c api/kiln/cli_tar.c api/kiln/cli_body_snap.c \
	api/kiln/cli_io.c
KILN_CLI_PURE_SRCS += api/kiln/cli_body_firewall.c
KILN_CLI_SRCS := $(KILN_CLI_PURE_SRCS) api/kiln/kiln.c api/kiln/cli_http.c api/kiln/cli_common.c \
	api/kiln/cli_cmd_sandbox.c api/kiln/cli_cmd_exec.c api/kiln/cli_cmd_cp.c lib/base/text_codec.c
KILN_CLI_SRCS += api/kiln/cli_cmd_snap.c api/kiln/cli_cmd_run.c api/kiln/cli_cmd_proc.c api/kiln/cli_cmd_shell.c api/kiln/cli_cmd_fs.c \
	api/proto/gz_stream.c api/proto/agent_tar.c api/proto/agent_proto.c
KILN_CLI_SRCS += api/kiln/cli_cmd_firewall.c
$(BUILD)/kiln: $(KILN_CLI_SRCS:%.c=$(BUILD)/obj/%.o)
	$(CC) $(CFLAGS) -o $@ $^ -lcurl -ljansson -lz -lpthread

# Cheap when cached: the script keys the cache on source version + config.
kernel:
	@kernel-config/build-kernel $(BUILD)/kernel

rootfs: $(ROOTFS)
$(ROOTFS): $(BUILD)/kiln-init rootfs/build-minimal
	rootfs/build-minimal $(BUILD)/kiln-init $(BUILD)/rootfs

# The test image: minimal + guest-side test and bench tools (tests/guest/,
# bench/guest/).
GUEST_TOOLS := $(BUILD)/tests/kiln-vsock-test $(BUILD)/tests/kiln-udp-flood $(BUILD)/tests/kiln-bench-guest
$(BUILD)/tests/kiln-%: tests/guest/kiln-%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -static -o $@ $<
$(BUILD)/tests/kiln-bench-guest: bench/guest/kiln-bench-guest.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -static -o $@ $<

$(TEST_ROOTFS): $(BUILD)/kiln-init rootfs/build-minimal $(GUEST_TOOLS)
	rootfs/build-minimal $(BUILD)/kiln-init $(BUILD)/rootfs minimal-test $(GUEST_TOOLS)

# The `debian` image (bookworm: python3, nodejs, npm, git, build-essential,
# curl, jq). Not part of `all` or `test`: cold, it downloads packages and
# takes minutes; cached in ~/.cache/kiln/images, a new kiln-init costs
# seconds (rootfs/build-debian).
.PHONY: image-debian
image-debian: $(BUILD)/rootfs/debian.ext4
$(BUILD)/rootfs/debian.ext4: $(BUILD)/kiln-init rootfs/build-debian
	@scripts/install-deps
	rootfs/build-debian $(BUILD)/kiln-init $(BUILD)/rootfs

# Unit tests: cmocka, under ASan + UBSan. Each test links only the modules
# it includes and what they use (scripts/unit-links writes the lists), so a
# test also proves its module links alone.
UNIT_LINKS := $(BUILD)/unit-links.mk
-include $(UNIT_LINKS)
$(UNIT_LINKS): scripts/unit-links $(shell find lib vmm devices guest-init api tests/unit -name '*.[ch]' 2>/dev/null)
	@mkdir -p $(dir $@)
	@scripts/unit-links > $@.tmp && mv $@.tmp $@

$(BUILD)/obj-san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -c $< -o $@

.SECONDEXPANSION:
unit_objs = $(addprefix $(BUILD)/obj-san/,$(patsubst %.c,%.o,$($(1)_SRCS)))
$(BUILD)/tests/%: tests/unit/%.c $(UNIT_LINKS) $$(call unit_objs,$$*)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -o $@ $< $(filter %.o,$^) -lcmocka -ljansson -lz -lpthread $(LIBS)

# Objects reached only through pattern rules are "intermediate" to make,
# which deletes them after each build; keep them, so unit tests relink only.
.SECONDARY:

# Fuzzing (docs/architecture.md, "Fuzzing"): one libFuzzer target per
# parser or device, tests/fuzz/fuzz_<name>.c, linked like a unit test with
# the real modules it includes (scripts/unit-links --dir tests/fuzz), all
# compiled by clang with ASan + UBSan into build/obj-fuzz/.
#   make fuzz            every target for FUZZ_SECONDS (60) each
#   make fuzz-<name>     one target; crashes and new corpus entries are
#                        kept under build/fuzz/<name>/
#   make fuzz-check      replay every committed corpus (tests/fuzz/corpus/)
#                        and run each target FUZZ_CHECK_SECONDS (5) fresh;
#                        `make unit` (so `make test`) runs it too
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_CHECK_SECONDS ?= 5
FUZZ_CFLAGS := -O1 -g -std=gnu11 -D_GNU_SOURCE $(WARN) -MMD -MP -I. -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=all
# A single allocation above 64 MiB is a finding: a guest or a client must
# not make kiln allocate without bound (DESIGN rule 3).
FUZZ_RUN_FLAGS ?= -rss_limit_mb=1024 -malloc_limit_mb=64 -timeout=10 -print_final_stats=1
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/bin/fuzz_%)
FUZZ_LINKS := $(BUILD)/fuzz-links.mk
-include $(FUZZ_LINKS)
$(FUZZ_LINKS): scripts/unit-links $(shell find lib vmm devices guest-init api tests/fuzz -name '*.[ch]' 2>/dev/null)
	@mkdir -p $(dir $@)
	@scripts/unit-links --dir tests/fuzz > $@.tmp && mv $@.tmp $@

$(BUILD)/obj-fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

fuzz_objs = $(addprefix $(BUILD)/obj-fuzz/,$(patsubst %.c,%.o,$($(1)_SRCS)))
$(BUILD)/fuzz/bin/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LINKS) $$(call fuzz_objs,fuzz_$$*)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(filter %.o,$^) -ljansson -lz -lpthread

# A target's dictionary, when it has one (tests/fuzz/dict/<name>.dict).
fuzz_dict = $(if $(wildcard tests/fuzz/dict/$(1).dict),-dict=tests/fuzz/dict/$(1).dict)

.PHONY: fuzz fuzz-check fuzz-bins $(FUZZ_TARGETS:%=fuzz-%)
fuzz-bins: $(FUZZ_BINS)
fuzz: $(FUZZ_BINS)
	@failed=""; for t in $(FUZZ_TARGETS); do \
		$(MAKE) --no-print-directory fuzz-$$t || failed="$$failed $$t"; done; \
	if [ -n "$$failed" ]; then echo "fuzz: findings in:$$failed (build/fuzz/<name>/)"; exit 1; fi

# New corpus entries go to build/fuzz/<name>/corpus (the committed seeds in
# tests/fuzz/corpus/<name> are read, never written); a crash is written to
# build/fuzz/<name>/crash-* and stops the run with its reproducer.
$(FUZZ_TARGETS:%=fuzz-%): fuzz-%: $(BUILD)/fuzz/bin/fuzz_%
	@mkdir -p $(BUILD)/fuzz/$*/corpus tests/fuzz/corpus/$*
	$< $(FUZZ_RUN_FLAGS) $(call fuzz_dict,$*) -max_total_time=$(FUZZ_SECONDS) \
		-artifact_prefix=$(BUILD)/fuzz/$*/ $(BUILD)/fuzz/$*/corpus tests/fuzz/corpus/$*

fuzz-check: $(FUZZ_BINS)
	@tests/fuzz/check $(BUILD) $(FUZZ_CHECK_SECONDS) $(FUZZ_TARGETS)

# The unit tests, then every fuzz corpus replayed and each target fuzzed
# FUZZ_CHECK_SECONDS fresh (about 110 s for 17 targets on 2 cores).
unit: layers $(UNIT_TESTS) $(FUZZ_BINS)
	@tests/unit/run $(UNIT_TESTS) tests/unit/check_layers_test
	@tests/fuzz/check $(BUILD) $(FUZZ_CHECK_SECONDS) $(FUZZ_TARGETS)

# The Debian image's test joins in when its base is cached (seconds to
# build from there); `make test-debian` builds it if need be and runs only it.
integration: all $(BUILD)/tests/triple-fault.elf $(TEST_ROOTFS)
	@if rootfs/build-debian --cached-only $(BUILD)/kiln-init $(BUILD)/rootfs; then \
		export KILN_DEBIAN_IMAGE=$(BUILD)/rootfs/debian.ext4; \
	else echo "integration: no cached Debian base: its test is left out (make test-debian)"; fi; \
	KILN_HARNESS_STALL=240 KILN_HARNESS_RETRIES=5 tests/harness/run tests/integration/run-all

test-debian: all image-debian
	KILN_DEBIAN_IMAGE=$(BUILD)/rootfs/debian.ext4 KILN_TEST_FILTER=debian KILN_HARNESS_STALL=240 \
		tests/harness/run tests/integration/run-all

test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory integration

demo: deps
	@$(MAKE) --no-print-directory all
	tests/harness/run --timeout 900 bench/demo

bench: bench-boot bench-devices bench-agent bench-api bench-snapshot bench-net

bench-boot: deps
	@$(MAKE) --no-print-directory all
	tests/harness/run bench/boot

bench-agent: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS)
	tests/harness/run --timeout 1800 bench/agent

bench-api: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS)
	tests/harness/run --timeout 1800 bench/api

bench-snapshot: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS)
	tests/harness/run --timeout 2400 bench/snapshot

bench-net: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS)
	tests/harness/run --timeout 2400 bench/net

# Both VMMs boot kiln's kernel + virtio-9p here (QEMU's shared directory).
bench-devices: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS)
	@kernel-config/build-kernel $(BUILD)/kernel-9p kernel-config/bench-9p.config
	tests/harness/run --timeout 2400 bench/devices

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/obj-san $(BUILD)/obj-fuzz $(BUILD)/tests $(BUILD)/fuzz/bin -name '*.d' 2>/dev/null)

# A PVH guest that triple-faults at once (tests/integration/triple_fault.S).
$(BUILD)/tests/triple-fault.elf: tests/integration/triple_fault.S
	@mkdir -p $(dir $@)
	$(CC) -c -o $@.o $<
	$(LD) -m elf_x86_64 --no-warn-rwx-segments -N -Ttext=0x100000 -o $@ $@.o
