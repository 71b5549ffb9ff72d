# kiln: the one build entry point.
#   make          build kiln-vmm, kiln-init, the guest kernel and the rootfs
#   make test     install what is missing, build, run unit + integration tests
#   make demo     boot a guest and print its boot timeline
#   make bench    boot and device benchmarks beside QEMU -M microvm, and
#                 the agent's exec latency and file throughput
#                 (make bench-boot, bench-devices, bench-agent: one of them)
#   make image-debian  the Debian guest image (minutes cold; not in `all`)
CC ?= gcc
BUILD := build
WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -D_GNU_SOURCE $(WARN) -MMD -MP -Ivmm -Idevices
LIBS :=
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

VMM_LIB_SRCS := $(filter-out vmm/main.c,$(wildcard vmm/*.c)) $(wildcard devices/*.c)
VMM_LIB_OBJS := $(VMM_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# kiln-init's agent server, processes, reaper and network settings.
# INIT_PURE_SRCS are unit-tested too (SAN_OBJS).
INIT_PURE_SRCS := guest-init/agent_env.c guest-init/netconf_params.c
INIT_AGENT_SRCS := $(INIT_PURE_SRCS) guest-init/agent.c guest-init/agent_exec.c \
	guest-init/agent_stream.c guest-init/agent_lifecycle.c guest-init/agent_proc.c \
	guest-init/agent_launch.c guest-init/reaper.c guest-init/child.c \
	guest-init/milestone.c guest-init/shutdown.c guest-init/say.c guest-init/netconf.c
# The file requests (docs/agent-protocol.md, 7.5); unit-tested in a scratch
# directory (tests/unit/test_agent_files.c), so they are in SAN_OBJS too.
INIT_FILES_SRCS := guest-init/agent_files.c guest-init/agent_fs.c guest-init/agent_walk.c \
	guest-init/agent_list.c guest-init/agent_remove.c guest-init/agent_tar_io.c
INIT_SRCS := guest-init/init.c guest-init/params.c guest-init/agent_proto.c \
	guest-init/agent_conn.c \
	guest-init/agent_tar.c \
	$(INIT_FILES_SRCS) \
	guest-init/agent_ring.c \
	$(INIT_AGENT_SRCS)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))

KERNEL := $(BUILD)/kernel/bzImage
VMLINUX := $(BUILD)/kernel/vmlinux
ROOTFS := $(BUILD)/rootfs/minimal.cpio
TEST_ROOTFS := $(BUILD)/rootfs/minimal-test.cpio

.PHONY: all deps kernel rootfs test unit integration demo bench bench-boot bench-devices bench-agent clean
all: $(BUILD)/kiln-vmm $(BUILD)/kiln-init $(BUILD)/kiln-agent $(BUILD)/kilnd $(BUILD)/kiln kernel rootfs

deps:
	@scripts/install-deps

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libkiln-vmm.a: $(VMM_LIB_OBJS)
	$(AR) rcs $@ $^

$(BUILD)/kiln-vmm: $(BUILD)/obj/vmm/main.o $(BUILD)/libkiln-vmm.a
	$(CC) $(CFLAGS) -o $@ $^ -lpthread $(LIBS)

# PID 1 of the guest: static, so the rootfs needs no libc (jansson comes
# from libjansson-dev's static archive).
$(BUILD)/kiln-init: $(INIT_SRCS) $(wildcard guest-init/*.h)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -static -o $@ $(INIT_SRCS) -ljansson

# Host-side agent client CLI (api/): links the guest's protocol layer so
# both ends share one framer and parser.
AGENT_CLIENT_SRCS := $(wildcard api/agent_client*.c)
AGENT_CLI_SRCS := api/kiln-agent.c $(AGENT_CLIENT_SRCS) guest-init/agent_proto.c
$(BUILD)/kiln-agent: $(AGENT_CLI_SRCS) $(wildcard api/agent_client*.h) guest-init/agent_proto.h
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -Iguest-init -Iapi -o $@ $(AGENT_CLI_SRCS) -ljansson

# kilnd, the daemon (docs/api.md). Its pure modules are unit-tested too
# (SAN_OBJS); the rest is libmicrohttpd, processes and sockets.
KILND_PURE_SRCS := api/api_error.c api/byte_queue.c api/exec_render.c api/exec_spec.c \
	api/json_fields.c api/metrics.c api/names.c api/query.c api/route.c \
	api/sandbox_record.c api/sandbox_spec.c api/sandbox_state.c api/text_codec.c \
	api/vmm_argv.c api/vmm_output.c api/files_spec.c api/gz_stream.c
# Background processes and the tty stream (docs/api.md, "Processes").
KILND_PURE_SRCS += api/proc_spec.c api/proc_render.c api/tty_escape.c
KILND_SRCS := $(KILND_PURE_SRCS) api/kilnd.c api/http.c api/listen.c api/images.c \
	api/sandbox.c api/sandboxes.c api/sandbox_vmm.c api/sandbox_store.c api/supervise.c \
	api/handle_sandboxes.c api/handle_exec.c \
	api/handle_files.c api/handle_misc.c $(AGENT_CLIENT_SRCS) guest-init/agent_proto.c
KILND_SRCS += api/handle_procs.c api/handle_proc_output.c api/handle_tty.c
KILND_SRCS += api/stream_job.c api/handle_fs.c api/handle_archive.c api/handle_ports.c api/port_fwd.c api/sandbox_ports.c
$(BUILD)/obj/api/%.o: CFLAGS += -Iguest-init
$(BUILD)/kilnd: $(KILND_SRCS:%.c=$(BUILD)/obj/%.o)
	$(CC) $(CFLAGS) -o $@ $^ -lmicrohttpd -ljansson -lz -lpthread

# kiln, the CLI (README "kiln CLI"): a libcurl client of kilnd's socket.
# Its pure parts (options, request bodies, errors, output) are unit-tested
# too (SAN_OBJS, tests/unit/test_kiln_cli.c).
KILN_CLI_PURE_SRCS := api/cli_opts.c api/cli_body.c api/cli_error.c api/cli_exec_out.c api/cli_format.c
KILN_CLI_SRCS := $(KILN_CLI_PURE_SRCS) api/kiln.c api/cli_http.c api/cli_common.c \
	api/cli_cmd_sandbox.c api/cli_cmd_exec.c api/cli_cmd_cp.c api/text_codec.c
$(BUILD)/kiln: $(KILN_CLI_SRCS:%.c=$(BUILD)/obj/%.o)
	$(CC) $(CFLAGS) -o $@ $^ -lcurl -ljansson

# Cheap when cached: the script keys the cache on source version + config.
kernel:
	@kernel-config/build-kernel $(BUILD)/kernel

rootfs: $(ROOTFS)
$(ROOTFS): $(BUILD)/kiln-init rootfs/build-minimal
	rootfs/build-minimal $(BUILD)/kiln-init $(BUILD)/rootfs

# The test image: minimal + guest-side test and bench tools (tests/guest/,
# bench/guest/).
GUEST_TOOLS := $(BUILD)/tests/kiln-vsock-test $(BUILD)/tests/kiln-bench-guest
$(BUILD)/tests/kiln-vsock-test: tests/guest/kiln-vsock-test.c
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

# Unit tests: pure modules linked with cmocka, under ASan + UBSan.
SAN_OBJS := $(patsubst %.c,$(BUILD)/obj-san/%.o,$(VMM_LIB_SRCS) guest-init/params.c guest-init/agent_proto.c $(INIT_PURE_SRCS) \
	guest-init/agent_conn.c \
	guest-init/agent_tar.c \
	$(INIT_FILES_SRCS) \
	guest-init/agent_ring.c \
	$(AGENT_CLIENT_SRCS))
# The host agent client links the guest's protocol layer (agent_proto.h).
$(BUILD)/obj-san/api/%.o: CFLAGS += -Iguest-init
SAN_OBJS += $(KILND_PURE_SRCS:%.c=$(BUILD)/obj-san/%.o)
SAN_OBJS += $(KILN_CLI_PURE_SRCS:%.c=$(BUILD)/obj-san/%.o)
$(BUILD)/obj-san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -c $< -o $@

$(BUILD)/tests/%: tests/unit/%.c $(SAN_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -Iguest-init -Iapi -Itests/unit -o $@ $< $(SAN_OBJS) -lcmocka -ljansson -lz -lpthread $(LIBS)

# Objects reached only through pattern rules are "intermediate" to make,
# which deletes them after each build; keep them, so unit tests relink only.
.SECONDARY:

unit: $(UNIT_TESTS)
	@tests/unit/run $(UNIT_TESTS)

integration: all $(BUILD)/tests/triple-fault.elf $(TEST_ROOTFS)
	KILN_HARNESS_STALL=240 KILN_HARNESS_RETRIES=3 tests/harness/run tests/integration/run-all

test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory integration

demo: deps
	@$(MAKE) --no-print-directory all
	tests/harness/run --timeout 900 bench/demo

bench: bench-boot bench-devices bench-agent

bench-boot: deps
	@$(MAKE) --no-print-directory all
	tests/harness/run bench/boot

bench-agent: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS)
	tests/harness/run --timeout 1800 bench/agent

# Both VMMs boot kiln's kernel + virtio-9p here (QEMU's shared directory).
bench-devices: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS)
	@kernel-config/build-kernel $(BUILD)/kernel-9p kernel-config/bench-9p.config
	tests/harness/run --timeout 2400 bench/devices

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/obj-san $(BUILD)/tests -name '*.d' 2>/dev/null)

# A PVH guest that triple-faults at once (tests/integration/triple_fault.S).
$(BUILD)/tests/triple-fault.elf: tests/integration/triple_fault.S
	@mkdir -p $(dir $@)
	$(CC) -c -o $@.o $<
	$(LD) -m elf_x86_64 --no-warn-rwx-segments -N -Ttext=0x100000 -o $@ $@.o
