# kiln: the one build entry point.
#   make          build kiln-vmm, kiln-init, the guest kernel and the rootfs
#   make test     install what is missing, build, run unit + integration tests
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
CFLAGS += -std=gnu11 -D_GNU_SOURCE $(WARN) -MMD -MP -I. -Iinclude
LIBS :=
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# One of each helper (lib/base, plain libc): linked into every program,
# kiln-init included, and into the unit tests through VMM_LIB_SRCS.
BASE_SRCS := lib/base/fd_io.c lib/base/mono.c lib/base/num_parse.c lib/base/term_mode.c lib/base/text_clean.c lib/base/utf8.c
# The VM core: vmm/ less the kiln-vmm program (vmm/kiln-vmm/, a user of
# libkiln's public API), its devices, and the shared modules they use.
VMM_LIB_SRCS := $(wildcard vmm/core/*.c vmm/boot/*.c vmm/snapshot/*.c) \
	$(wildcard devices/*/*.c) $(wildcard lib/guest/*.c lib/netrules/*.c) lib/base/err.c \
	$(BASE_SRCS)
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
	$(INIT_AGENT_SRCS) $(BASE_SRCS)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))

KERNEL := $(BUILD)/kernel/bzImage
VMLINUX := $(BUILD)/kernel/vmlinux
ROOTFS := $(BUILD)/rootfs/minimal.cpio
TEST_ROOTFS := $(BUILD)/rootfs/minimal-test.cpio

.PHONY: all layers deps kernel rootfs test test-debian unit integration demo bench bench-boot bench-devices bench-agent bench-api bench-snapshot bench-net clean
all: layers $(BUILD)/libkiln.so.0 $(BUILD)/libkiln.a $(BUILD)/kiln-vmm $(BUILD)/kiln-init $(BUILD)/kiln-agent $(BUILD)/kilnd $(BUILD)/kiln kernel rootfs

deps:
	@scripts/install-deps

# Every #include points down the folder map (docs/architecture.md,
# "Folders"): a forbidden one fails the build here.
layers:
	@scripts/check-layers

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# kiln-vmm is a thin user of libkiln's public API (include/kiln/): it
# links libkiln's objects as built for the other programs (build/obj/,
# not -fPIC), as an archive so only what it calls comes in.
KILN_VMM_SRCS := vmm/kiln-vmm/main.c vmm/kiln-vmm/control.c vmm/control/control_proto.c
LIBKILN_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard lib/kiln/*.c) $(wildcard api/agent-client/*.c) \
	api/proto/agent_proto.c) $(VMM_LIB_OBJS)
$(BUILD)/libkiln-vmm.a: $(LIBKILN_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/kiln-vmm: $(KILN_VMM_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/libkiln-vmm.a
	$(CC) $(CFLAGS) -o $@ $^ -lz -ljansson -lpthread $(LIBS)

# libkiln (docs/libkiln.md): the public API of lib/kiln/ over the VMM core
# and the agent client kilnd uses. Its objects are a set of their own
# (build/obj-pic/: -fPIC, hidden visibility, hardened as STYLE.md rule 7
# says), so the programs' objects stay as they are. Only kiln_* is
# exported (lib/kiln/libkiln.map; checked by tests/unit/exports_test).
LIBKILN_VERSION := 0.1.0
LIBKILN_SRCS := $(wildcard lib/kiln/*.c) $(VMM_LIB_SRCS) \
	$(wildcard api/agent-client/*.c) api/proto/agent_proto.c
LIBKILN_PIC_OBJS := $(LIBKILN_SRCS:%.c=$(BUILD)/obj-pic/%.o)
HARDEN := -fstack-protector-strong -D_FORTIFY_SOURCE=2
LIB_LDFLAGS := -Wl,-z,relro,-z,now -Wl,-z,noexecstack
$(BUILD)/obj-pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(HARDEN) -fPIC -fvisibility=hidden -DKILN_BUILDING_LIBRARY -c $< -o $@

$(BUILD)/libkiln.so.$(LIBKILN_VERSION): $(LIBKILN_PIC_OBJS) lib/kiln/libkiln.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libkiln.so.0 -Wl,--version-script=lib/kiln/libkiln.map \
		$(LIB_LDFLAGS) -Wl,--no-undefined -o $@ $(LIBKILN_PIC_OBJS) -lz -ljansson -lpthread
$(BUILD)/libkiln.so.0: $(BUILD)/libkiln.so.$(LIBKILN_VERSION)
	ln -sf libkiln.so.$(LIBKILN_VERSION) $@
	ln -sf libkiln.so.$(LIBKILN_VERSION) $(BUILD)/libkiln.so
# The static archive cannot hide symbols: the internal prefixes (vm_,
# net_, agent_client_, ...) never start with kiln_, so they cannot clash
# with the public names (docs/libkiln.md, "Static linking").
$(BUILD)/libkiln.a: $(LIBKILN_PIC_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

# make install PREFIX=/usr/local DESTDIR=: programs, libkiln (shared,
# static, headers, kiln.pc), the guest's init (a guest artifact: it goes
# into images, rootfs/build-* take it from $(PREFIX)/lib/kiln) and docs.
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
.PHONY: install
install: $(BUILD)/kiln-vmm $(BUILD)/kilnd $(BUILD)/kiln $(BUILD)/kiln-agent $(BUILD)/kiln-init \
		$(BUILD)/libkiln.so.0 $(BUILD)/libkiln.a
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/kiln \
		$(DESTDIR)$(PREFIX)/lib/kiln $(DESTDIR)$(PREFIX)/share/doc/kiln
	install -m 0755 $(BUILD)/kiln-vmm $(BUILD)/kilnd $(BUILD)/kiln $(BUILD)/kiln-agent $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(BUILD)/kiln-init $(DESTDIR)$(PREFIX)/lib/kiln/
	install -m 0755 $(BUILD)/libkiln.so.$(LIBKILN_VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libkiln.so.$(LIBKILN_VERSION) $(DESTDIR)$(LIBDIR)/libkiln.so.0
	ln -sf libkiln.so.0 $(DESTDIR)$(LIBDIR)/libkiln.so
	install -m 0644 $(BUILD)/libkiln.a $(DESTDIR)$(LIBDIR)/
	install -m 0644 include/kiln/*.h $(DESTDIR)$(INCLUDEDIR)/kiln/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(LIBKILN_VERSION)|' lib/kiln/kiln.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/kiln.pc
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/kiln/

# PID 1 of the guest: static, so the rootfs needs no libc (jansson comes
# from libjansson-dev's static archive).
$(BUILD)/kiln-init: $(INIT_SRCS) $(wildcard guest-init/*.h guest-init/agent/*.h api/proto/*.h lib/base/*.h)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -static -o $@ $(INIT_SRCS) -ljansson

# Host-side agent client CLI (api/): links the guest's protocol layer so
# both ends share one framer and parser.
AGENT_CLIENT_SRCS := $(wildcard api/agent-client/*.c)
# kiln-agent.c is main and the command table; ka_cmd_<group>.c the commands.
AGENT_CLI_SRCS := $(wildcard api/kiln-agent/*.c) $(AGENT_CLIENT_SRCS) api/proto/agent_proto.c \
	$(BASE_SRCS)
$(BUILD)/kiln-agent: $(AGENT_CLI_SRCS) $(wildcard api/kiln-agent/*.h api/agent-client/*.h) api/proto/agent_proto.h
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -o $@ $(AGENT_CLI_SRCS) -ljansson

# kilnd, the daemon (docs/api.md), one folder per layer (docs/architecture.md,
# "Folders"): core <- http, sandbox <- endpoints/<resource> <- kilnd.c. Its
# pure modules are unit-tested too; the rest is libmicrohttpd, processes
# and sockets.
KILND_PURE_SRCS := $(addprefix api/kilnd/core/,api_error.c json_fields.c metrics.c names.c query.c \
	sandbox_spec.c sandbox_state.c) \
	$(addprefix api/kilnd/http/,byte_queue.c route.c) \
	$(addprefix api/kilnd/sandbox/,sandbox_record.c vmm_argv.c vmm_output.c files_spec.c) \
	$(addprefix api/kilnd/endpoints/exec/,exec_render.c exec_spec.c) \
	lib/base/base64.c api/proto/gz_stream.c
# Background processes and the tty stream (docs/api.md, "Processes").
KILND_PURE_SRCS += $(addprefix api/kilnd/endpoints/procs/,proc_spec.c proc_render.c tty_escape.c)
# Snapshots (docs/api.md, "Pause, checkpoints, forks, hibernation"): the
# control socket client is tested against a fake kiln-vmm; its codec is
# kiln-vmm's own (vmm/control/control_proto.c).
KILND_PURE_SRCS += api/kilnd/sandbox/checkpoint.c api/kilnd/sandbox/vmm_control.c
# Networking (docs/api.md, "Networking and firewall"): rule sets are
# validated by the VMM's own parser (lib/netrules/net_rules.c).
KILND_PURE_SRCS += api/kilnd/core/firewall_spec.c
KILND_SRCS := $(KILND_PURE_SRCS) api/kilnd/kilnd.c api/kilnd/core/listen.c \
	$(addprefix api/kilnd/http/,http.c stream_job.c) \
	$(addprefix api/kilnd/sandbox/,sandbox.c sandboxes.c sandbox_vmm.c sandbox_store.c supervise.c images.c \
		port_fwd.c sandbox_ports.c sandbox_snap.c sandbox_fork.c sandbox_firewall.c)
# The endpoints: the dispatch table and every endpoints/<resource>/handle_*.c.
KILND_SRCS += api/kilnd/endpoints/dispatch.c $(sort $(wildcard api/kilnd/endpoints/*/handle_*.c))
KILND_SRCS += $(AGENT_CLIENT_SRCS) api/proto/agent_proto.c lib/base/sock_relay.c \
	lib/netrules/net_rules.c lib/netrules/net_addr.c vmm/control/control_proto.c $(BASE_SRCS)
$(BUILD)/kilnd: $(KILND_SRCS:%.c=$(BUILD)/obj/%.o)
	$(CC) $(CFLAGS) -o $@ $^ -lmicrohttpd -ljansson -lz -lpthread

# kiln, the CLI (README "kiln CLI"): a libcurl client of kilnd's socket.
# Its pure parts (options, request bodies, errors, output) are unit-tested
# too (tests/unit/test_kiln_cli*.c).
KILN_CLI_PURE_SRCS := api/kiln/cli_opts.c api/kiln/cli_body.c api/kiln/cli_error.c api/kiln/cli_exec_out.c api/kiln/cli_format.c
# The tty stream's request and escape, the process/fs/port command lines,
# and the directory archives of cp (tested in a scratch directory; the tar
# format is the agent's api/proto/agent_tar.c, gzip is api/proto/gz_stream.c).
KILN_CLI_PURE_SRCS += api/kiln/cli_tty.c api/kiln/cli_body_proc.c api/kiln/cli_body_fs.c api/kiln/cli_tar.c api/kiln/cli_body_snap.c
KILN_CLI_PURE_SRCS += api/kiln/cli_body_firewall.c
KILN_CLI_SRCS := $(KILN_CLI_PURE_SRCS) api/kiln/kiln.c api/kiln/cli_http.c api/kiln/cli_common.c \
	api/kiln/cli_cmd_sandbox.c api/kiln/cli_cmd_exec.c api/kiln/cli_cmd_cp.c lib/base/base64.c
KILN_CLI_SRCS += api/kiln/cli_cmd_snap.c api/kiln/cli_cmd_run.c api/kiln/cli_cmd_proc.c api/kiln/cli_cmd_shell.c api/kiln/cli_cmd_fs.c \
	api/proto/gz_stream.c api/proto/agent_tar.c api/proto/agent_proto.c
KILN_CLI_SRCS += api/kiln/cli_cmd_firewall.c $(BASE_SRCS)
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

unit: layers $(UNIT_TESTS) $(BUILD)/libkiln.so.0
	@tests/unit/run $(UNIT_TESTS) tests/unit/check_layers_test tests/unit/public_headers_test tests/unit/exports_test

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

-include $(shell find $(BUILD)/obj $(BUILD)/obj-san $(BUILD)/obj-pic $(BUILD)/tests -name '*.d' 2>/dev/null)

# A PVH guest that triple-faults at once (tests/integration/triple_fault.S).
$(BUILD)/tests/triple-fault.elf: tests/integration/triple_fault.S
	@mkdir -p $(dir $@)
	$(CC) -c -o $@.o $<
	$(LD) -m elf_x86_64 --no-warn-rwx-segments -N -Ttext=0x100000 -o $@ $@.o
