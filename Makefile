# kiln: the one build entry point (docs/building.md).
#   make          the host side only (= make host): kiln-vmm, kilnd, kiln,
#                 kiln-agent, kiln-image-import, kiln-egress, kiln-init, libkiln
#   make guest    the guest kernel and the minimal root images
#   make all      both
#   make test     install what is missing, build, run unit (+ fuzz corpus replay) + integration tests
#   make fuzz     run every libFuzzer target FUZZ_SECONDS (60) each (make fuzz-<name>: one)
#   make demo     boot a guest and print its boot timeline; then a sandbox
#                 through kilnd: create, exec, rm, with timings
#   make bench    boot and device benchmarks beside QEMU -M microvm, the
#                 agent's exec latency and file throughput, and kilnd's
#                 create-to-ready and API exec round trip, and checkpoint,
#                 restore and fork beside a cold boot, N sandboxes forked
#                 from one template (density), and guest<->host TCP
#                 with the packet filter off and on, HTTP(S) through the
#                 egress proxy against the filter alone, kilnd's HTTP layer
#                 alone, a 200 MiB OCI image import, and the exec round
#                 trip through each SDK beside the CLI (make bench-boot,
#                 bench-devices, bench-agent, bench-api, bench-images,
#                 bench-snapshot, bench-density, bench-net, bench-egress,
#                 bench-http, bench-sdk), then
#                 the performance targets' table (make bench-targets: the
#                 table alone, from the last boot, snapshot, devices and density results)
#   make bench-confinement  create and wake beside the tree before the
#                 current confinement (CONFINEMENT_BASE), in one run
#   make image-debian  the Debian guest image (minutes cold; not in `all`)
#   make test-debian   build it and run its test (kiln run debian -- python3 ...)
CC ?= gcc
BUILD := build
WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -D_GNU_SOURCE $(WARN) -MMD -MP -I. -Iinclude
LIBS :=
# Plain `make` is `make host` (the first rule in this file is not it).
.DEFAULT_GOAL := host
# The soname, libkiln.so.<KILN_ABI_VERSION> (include/kiln/version.h: it
# changes when a public function is removed or changes meaning; 1 since
# kiln_vm_config_add_device went), and the file it names. Set before
# the first rule that names them: a rule's prerequisites are read at once.
LIBKILN_ABI := $(shell sed -n 's/^\#define KILN_ABI_VERSION //p' include/kiln/version.h)
LIBKILN_SONAME := libkiln.so.$(LIBKILN_ABI)
LIBKILN_FILE := $(LIBKILN_SONAME).0.0
# Goals that build nothing; with only these, reading the Makefile writes
# nothing under build/ (no flags stamp, no link lists to include).
NOBUILD_GOALS := clean deps layers bench-targets
BUILDING := $(if $(MAKECMDGOALS),$(filter-out $(NOBUILD_GOALS),$(MAKECMDGOALS)),default)
# Link flags of the Debian libraries come from their pkg-config files
# (the plain -l flag where pkg-config or the .pc is missing, so that the
# Makefile still reads before scripts/install-deps has run).
PKG_CONFIG ?= pkg-config
pc_libs = $(or $(strip $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)),$(2))
pc_static_libs = $(or $(strip $(shell $(PKG_CONFIG) --static --libs $(1) 2>/dev/null)),$(2))
JANSSON_LIBS := $(call pc_libs,jansson,-ljansson)
SECCOMP_LIBS := $(call pc_libs,libseccomp,-lseccomp)
ZLIB_LIBS := $(call pc_libs,zlib,-lz)
CURL_LIBS := $(call pc_libs,libcurl,-lcurl)
ARCHIVE_LIBS := $(call pc_libs,libarchive,-larchive)
CMOCKA_LIBS := $(call pc_libs,cmocka,-lcmocka)
# nettle's SHA-256 (lib/digest): only kilnd, kiln-image-import and the
# tests and fuzz targets that reach lib/digest link it.
NETTLE_LIBS := $(call pc_libs,nettle,-lnettle)
# OpenSSL's libcrypto (lib/tlsmint, the egress proxy's CA): only what
# reaches lib/tlsmint links it (kiln-egress, and the tests and fuzz
# targets below); libssl only where a TLS handshake is made.
CRYPTO_LIBS := $(call pc_libs,libcrypto,-lcrypto)
SSL_LIBS := $(call pc_libs,libssl,-lssl)
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# Sources by folder (docs/architecture.md, "Folders"): a program is its
# own folder plus the libraries it uses, and each library is a folder.
# lib/base (one of each helper, plain libc) goes into every program, the
# static kiln-init included, as an archive: each takes only what it calls.
BASE_SRCS := $(wildcard lib/base/*.c)
BASE_LIB := $(BUILD)/libkiln-base.a
$(BASE_LIB): $(BASE_SRCS:%.c=$(BUILD)/obj/%.o)
	rm -f $@
	$(AR) rcs $@ $^
# The snapshot file formats (vmm/snapshot less the VM's own save and
# restore): kilnd reads and folds snapshot layers with them.
SNAPSHOT_VM_SRCS := vmm/snapshot/vm_snapshot.c vmm/snapshot/vm_workingset.c vmm/snapshot/snapshot_kvm.c \
	vmm/snapshot/snapshot_sregs.c
SNAPSHOT_FORMAT_SRCS := $(filter-out $(SNAPSHOT_VM_SRCS),$(wildcard vmm/snapshot/*.c))
# The VM core: vmm/ less the kiln-vmm program (vmm/kiln-vmm/, a user of
# libkiln's public API), its devices, and the shared modules they use.
# The egress proxy's parsers (issue 37) are linked by kiln-egress alone
# (api/egress/, below): the proxy is a program of its own, outside the
# VMM, so kiln-vmm, libkiln and kilnd leave them out; all but the PROXY
# v2 header's codec, which both ends of a steered flow link: kiln-vmm's
# net_steer writes the header, kiln-egress reads it (VMM_PROXY_SRCS).
# kiln-vmm's own end of those flows (devices/net/tcp_term.c, net_steer.c)
# is in devices/ like every device's parts. The http rules (http_rules.c)
# are part of every firewall rule set, so everyone parses them.
EGRESS_PROXY_SRCS := lib/netrules/tls_hello.c lib/netrules/proxy_v2.c
# The egress decision stream's lines: kiln-egress and kilnd, never the VMM.
EGRESS_DECISION_SRCS := lib/netrules/egress_decision.c
NETRULES_SRCS := $(filter-out $(EGRESS_PROXY_SRCS) $(EGRESS_DECISION_SRCS),$(wildcard lib/netrules/*.c))
VMM_PROXY_SRCS := lib/netrules/proxy_v2.c
VMM_LIB_SRCS := $(wildcard vmm/core/*.c vmm/boot/*.c vmm/snapshot/*.c vmm/jail/*.c) \
	$(wildcard devices/*/*.c) $(wildcard lib/guest/*.c lib/egress/*.c) $(NETRULES_SRCS) $(VMM_PROXY_SRCS) $(BASE_SRCS)
VMM_LIB_OBJS := $(VMM_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# The agent protocol's host side (a library: libkiln, kilnd, kiln-agent).
AGENT_CLIENT_SRCS := $(wildcard api/agent-client/*.c) api/proto/agent_proto.c api/proto/agent_proto_ctr.c api/proto/agent_proto_sec.c api/proto/agent_proto_seccomp.c
# kiln-init: PID 1 (guest-init/init.c), its primitives (sys/), the agent
# (agent/), and the protocol codec it shares with the host.
INIT_SRCS := $(wildcard guest-init/*.c guest-init/sys/*.c guest-init/agent/*.c) \
	api/proto/agent_proto.c api/proto/agent_proto_ctr.c api/proto/agent_proto_sec.c api/proto/agent_proto_seccomp.c api/proto/agent_tar.c
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))

KERNEL := $(BUILD)/kernel/bzImage
VMLINUX := $(BUILD)/kernel/vmlinux
ROOTFS := $(BUILD)/rootfs/minimal.cpio
TEST_ROOTFS := $(BUILD)/rootfs/minimal-test.cpio

.PHONY: host guest all layers deps kernel rootfs test test-debian soak unit api-spec integration demo bench bench-boot bench-devices bench-agent bench-api bench-images bench-snapshot bench-density bench-net bench-egress bench-http bench-sdk bench-oci bench-targets clean
# The host side (what `make install` installs) never waits for the guest
# kernel: a library user wanting build/libkiln.so builds in a minute, not
# nine. kiln-init is the host toolchain's too (seconds; kilnd injects it
# into imported images).
host: layers $(BUILD)/$(LIBKILN_SONAME) $(BUILD)/libkiln.a $(BUILD)/kiln-vmm $(BUILD)/kiln-init $(BUILD)/kiln-agent $(BUILD)/kilnd \
	$(BUILD)/kiln $(BUILD)/kiln-image-import $(BUILD)/kiln-runtime $(BUILD)/kiln-egress
guest: kernel rootfs
all: host guest

deps:
	@scripts/install-deps

# Every #include points down the folder map (docs/architecture.md,
# "Folders"): a forbidden one fails the build here.
layers:
	@scripts/check-layers
	@scripts/check-format

# Lay every C file out as .clang-format says (STYLE.md rule 7); `make`
# checks it with the layers.
.PHONY: format
format:
	git ls-files -z '*.c' '*.h' | grep -zv '^tests/fuzz/corpus/' | xargs -0 clang-format -i

# Hardening (STYLE.md rule 7, docs/security.md "Build hardening"): every
# host program's objects are compiled with HOST_CFLAGS and every host
# program linked with HOST_LDFLAGS (a PIE with full RELRO: the GOT is
# read-only before main, so a write primitive cannot redirect a libc call);
# libkiln.so gets the same through obj-pic/ and LIB_LDFLAGS, the static
# kiln-init is a static PIE. tests/unit/hardening_test checks the ELF files.
# (Unit tests and fuzz targets run under sanitizers instead.)
HARDEN := -fstack-protector-strong -D_FORTIFY_SOURCE=2
HOST_CFLAGS := $(HARDEN) -fPIE
LIB_LDFLAGS := -Wl,-z,relro,-z,now -Wl,-z,noexecstack
HOST_LDFLAGS := -pie $(LIB_LDFLAGS)
# How kiln-vmm is linked (below, at its rule): static or dynamic.
VMM_LINK ?= static
HOST_PROGRAMS := $(BUILD)/kiln-vmm $(BUILD)/kilnd $(BUILD)/kiln $(BUILD)/kiln-agent $(BUILD)/kiln-image-import $(BUILD)/kiln-runtime \
	$(BUILD)/kiln-egress
# `private`: the link flags do not leak into the prerequisites' compiles.
$(HOST_PROGRAMS): private CFLAGS += $(HOST_CFLAGS) $(HOST_LDFLAGS)
# A stamp named for the flags, made as the Makefile is read (a rule would
# be skipped: .SECONDARY): changing them rebuilds every host object.
# Not for goals that build nothing: `make clean` (even `make -n clean`)
# must not create build/.
HOST_FLAGS_STAMP := $(BUILD)/.host-flags-$(shell echo '$(CFLAGS) $(HOST_CFLAGS) $(HOST_LDFLAGS) $(VMM_LINK)' | cksum | cut -d' ' -f1)
ifneq ($(BUILDING),)
$(shell [ -f $(HOST_FLAGS_STAMP) ] || { mkdir -p $(BUILD); rm -f $(BUILD)/.host-flags-*; touch $(HOST_FLAGS_STAMP); })
endif

$(BUILD)/obj/%.o: %.c $(HOST_FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(HOST_CFLAGS) -c $< -o $@

# kiln-vmm is a thin user of libkiln's public API (include/kiln/): it
# links libkiln's objects as built for the other programs (build/obj/,
# not -fPIC), as an archive so only what it calls comes in.
KILN_VMM_SRCS := $(wildcard vmm/kiln-vmm/*.c) vmm/control/control_proto.c vmm/control/park_proto.c
LIBKILN_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard libkiln/*.c) $(AGENT_CLIENT_SRCS)) $(VMM_LIB_OBJS)
# The Debian packages libkiln links, by their pkg-config names: the link
# lines of libkiln.so and kiln-vmm and kiln.pc's Requires.private (so that
# `pkg-config --static --libs kiln` brings each one's own flags) are all
# this list.
LIBKILN_REQUIRES := zlib jansson libseccomp
LIBKILN_LIBS := $(call pc_libs,$(LIBKILN_REQUIRES),-lz -ljansson -lseccomp)
$(BUILD)/libkiln-vmm.a: $(LIBKILN_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

# kiln-vmm is a static PIE: every sandbox start, wake and fork execs it,
# and a static binary has no libraries for the dynamic loader to find, map
# and bind first (docs/architecture.md, "kiln-vmm's start"). Hardened like
# the others (tests/unit/hardening_test). VMM_LINK=dynamic links it against
# the shared libraries instead (a distribution that patches them in place).
ifeq ($(VMM_LINK),static)
VMM_LINK_FLAGS := -static-pie
VMM_LIBS := $(call pc_static_libs,$(LIBKILN_REQUIRES),-lz -ljansson -lseccomp)
else ifeq ($(VMM_LINK),dynamic)
VMM_LINK_FLAGS :=
VMM_LIBS := $(LIBKILN_LIBS)
else
$(error VMM_LINK=$(VMM_LINK): use static or dynamic)
endif
$(BUILD)/kiln-vmm: $(KILN_VMM_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/libkiln-vmm.a
	$(CC) $(CFLAGS) -o $@ $^ $(VMM_LIBS) -lpthread $(LIBS) $(VMM_LINK_FLAGS)

# The escape suite's compromised VMM (tests/escape/): kiln-vmm's own
# parser and setup (every vmm/kiln-vmm module but main.c), then attacks.
ESCAPE_SRCS := tests/escape/kiln-escape.c $(filter-out vmm/kiln-vmm/main.c,$(KILN_VMM_SRCS)) \
	vmm/control/control_client.c
$(BUILD)/tests/kiln-escape: $(ESCAPE_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/libkiln-vmm.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(VMM_LIBS) -lpthread $(LIBS) $(VMM_LINK_FLAGS)
# The compromised image importer: the importer's own seccomp filter, then attacks.
$(BUILD)/tests/kiln-escape-importer: $(BUILD)/obj/tests/escape/kiln-escape-importer.o \
		$(BUILD)/obj/api/image-import/import_seccomp.o $(BASE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(SECCOMP_LIBS)

# libkiln (docs/libkiln.md): the public API of libkiln/ over the VMM core
# and the agent client kilnd uses. Its objects are a set of their own
# (build/obj-pic/: -fPIC, hidden visibility, hardened as STYLE.md rule 7
# says), so the programs' objects stay as they are. Only kiln_* is
# exported (libkiln/libkiln.map; checked by tests/unit/exports_test).
LIBKILN_VERSION := 0.1.0
LIBKILN_SRCS := $(wildcard libkiln/*.c) $(VMM_LIB_SRCS) $(AGENT_CLIENT_SRCS)
LIBKILN_PIC_OBJS := $(LIBKILN_SRCS:%.c=$(BUILD)/obj-pic/%.o)
$(BUILD)/obj-pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(HARDEN) -fPIC -fvisibility=hidden -DKILN_BUILDING_LIBRARY -c $< -o $@

$(BUILD)/$(LIBKILN_FILE): $(LIBKILN_PIC_OBJS) libkiln/libkiln.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,$(LIBKILN_SONAME) -Wl,--version-script=libkiln/libkiln.map \
		$(LIB_LDFLAGS) -Wl,--no-undefined -o $@ $(LIBKILN_PIC_OBJS) $(LIBKILN_LIBS) -lpthread
$(BUILD)/$(LIBKILN_SONAME): $(BUILD)/$(LIBKILN_FILE)
	ln -sf $(LIBKILN_FILE) $@
	ln -sf $(LIBKILN_FILE) $(BUILD)/libkiln.so
# The static archive cannot hide symbols: the internal prefixes (vm_,
# net_, agent_client_, ...) never start with kiln_, so they cannot clash
# with the public names (docs/libkiln.md, "Conventions", Symbols).
$(BUILD)/libkiln.a: $(LIBKILN_PIC_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

# make install PREFIX=/usr/local DESTDIR=: programs, libkiln (shared,
# static, headers, kiln.pc), the guest's init (a guest artifact: it goes
# into images, rootfs/build-* take it from $(PREFIX)/lib/kiln) and docs.
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
# kiln.pc for PREFIX: `make install` installs it; tests/unit/libkiln_pc_test
# links a static program with its flags.
kiln_pc = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	-e 's|@VERSION@|$(LIBKILN_VERSION)|' -e 's|@REQUIRES@|$(LIBKILN_REQUIRES)|' libkiln/kiln.pc.in
$(BUILD)/kiln.pc: libkiln/kiln.pc.in Makefile
	@mkdir -p $(BUILD)
	$(kiln_pc) >$@
.PHONY: install
install: $(BUILD)/kiln-vmm $(BUILD)/kilnd $(BUILD)/kiln $(BUILD)/kiln-agent $(BUILD)/kiln-init $(BUILD)/kiln-image-import $(BUILD)/kiln-runtime $(BUILD)/kiln-egress \
		$(BUILD)/$(LIBKILN_SONAME) $(BUILD)/libkiln.a
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/kiln \
		$(DESTDIR)$(PREFIX)/lib/kiln $(DESTDIR)$(PREFIX)/share/doc/kiln
	install -m 0755 $(BUILD)/kiln-vmm $(BUILD)/kilnd $(BUILD)/kiln $(BUILD)/kiln-agent $(BUILD)/kiln-runtime $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(BUILD)/kiln-init $(BUILD)/kiln-image-import $(BUILD)/kiln-egress $(DESTDIR)$(PREFIX)/lib/kiln/
	install -m 0755 $(BUILD)/$(LIBKILN_FILE) $(DESTDIR)$(LIBDIR)/
	ln -sf $(LIBKILN_FILE) $(DESTDIR)$(LIBDIR)/$(LIBKILN_SONAME)
	ln -sf $(LIBKILN_SONAME) $(DESTDIR)$(LIBDIR)/libkiln.so
	install -m 0644 $(BUILD)/libkiln.a $(DESTDIR)$(LIBDIR)/
	install -m 0644 include/kiln/*.h $(DESTDIR)$(INCLUDEDIR)/kiln/
	$(kiln_pc) >$(DESTDIR)$(LIBDIR)/pkgconfig/kiln.pc
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/kiln/

# What kiln-runtime boots, beside the programs: the guest kernel and
# kiln-runtime's initramfs, into lib/kiln/ (docs/oci-runtime.md).
.PHONY: install-guest
install-guest: $(OCI_INIT)
	@test -f $(BUILD)/kernel/vmlinux || { echo "install-guest: no $(BUILD)/kernel/vmlinux: run make guest first" >&2; exit 1; }
	install -d $(DESTDIR)$(PREFIX)/lib/kiln
	install -m 0644 $(BUILD)/kernel/vmlinux $(OCI_INIT) $(DESTDIR)$(PREFIX)/lib/kiln/

# PID 1 of the guest: a static PIE, so the rootfs needs no libc (jansson comes
# from libjansson-dev's static archive).
$(BUILD)/kiln-init: $(INIT_SRCS) $(BASE_LIB) $(HOST_FLAGS_STAMP) $(wildcard guest-init/*.h guest-init/*/*.h api/proto/*.h lib/base/*.h) \
		$(wildcard guest-init/agent/run/*)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) $(HOST_CFLAGS) -static-pie $(LIB_LDFLAGS) -o $@ $(INIT_SRCS) $(BASE_LIB) $(call pc_static_libs,jansson,-ljansson)

# kiln-agent, the agent client's debugging CLI: kiln-agent.c is main and
# the command table, ka_cmd_<group>.c the commands.
KILN_AGENT_SRCS := $(wildcard api/kiln-agent/*.c) $(AGENT_CLIENT_SRCS)
$(BUILD)/kiln-agent: $(KILN_AGENT_SRCS:%.c=$(BUILD)/obj/%.o) $(BASE_LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(ZLIB_LIBS)

# kilnd, the daemon (docs/api.md), one folder per concern (docs/architecture.md,
# "kilnd by concern"): core, http, keeper <- bodies, the sandbox model
# (registry, supervision, images, net) <- preview, endpoints <- kilnd.c. It
# validates rule sets with the VMM's own parser (lib/netrules), holds passt
# to them outside the VMM with cgroup programs (lib/egress), keeps each
# VMM's cgroup with lib/cgroup (kiln-runtime a container's too), talks to
# kiln-vmm through the control socket's one codec (vmm/control) and folds
# a deleted checkpoint into those layered on it (vmm/snapshot).
KILND_SRCS := $(shell find api/kilnd -name '*.c' | sort) api/proto/agent_proto.c api/proto/gz_stream.c api/proto/agent_tar.c \
	$(NETRULES_SRCS) $(EGRESS_DECISION_SRCS) $(wildcard lib/egress/*.c lib/digest/*.c lib/cgroup/*.c) vmm/control/control_proto.c vmm/control/control_client.c vmm/control/park_proto.c $(SNAPSHOT_FORMAT_SRCS)
# kilnd talks to guests through libkiln's public agent API
# (include/kiln/agent.h) only, never api/agent-client itself: it links the
# static archive, from which the linker takes only the agent's objects and
# the agent client under them (nothing of the VM).
$(BUILD)/kilnd: $(KILND_SRCS:%.c=$(BUILD)/obj/%.o) $(BASE_LIB) $(BUILD)/libkiln.a
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(ZLIB_LIBS) -lpthread $(NETTLE_LIBS) $(SECCOMP_LIBS)

# kiln-image-import (docs/architecture.md, "Image import"): the OCI and
# docker save importer kilnd runs as an unprivileged child per import.
IMAGE_IMPORT_SRCS := $(wildcard api/image-import/*.c lib/digest/*.c)
$(BUILD)/kiln-image-import: $(IMAGE_IMPORT_SRCS:%.c=$(BUILD)/obj/%.o) $(BASE_LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(ARCHIVE_LIBS) $(JANSSON_LIBS) $(SECCOMP_LIBS) $(NETTLE_LIBS)

# kiln-egress, the HTTP(S) egress proxy (issue 37; api/egress/): a program
# of its own outside the VMM, the one that links the proxy's parsers.
# It alone of the programs links OpenSSL (lib/tlsmint, and libssl for
# the TLS it terminates and makes when it intercepts).
KILN_EGRESS_SRCS := $(wildcard api/egress/*.c lib/tlsmint/*.c) $(EGRESS_PROXY_SRCS) $(EGRESS_DECISION_SRCS) $(NETRULES_SRCS)
$(BUILD)/kiln-egress: $(KILN_EGRESS_SRCS:%.c=$(BUILD)/obj/%.o) $(BASE_LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) -lpthread $(SSL_LIBS) $(CRYPTO_LIBS)

# kiln-runtime, the OCI runtime (issue 34; api/runtime/): runc's command
# line, a bundle's config.json, the state directory. It execs kiln-vmm
# (jailed) and never links the VM.
KILN_RUNTIME_SRCS := $(wildcard api/runtime/*.c lib/cgroup/*.c) $(AGENT_CLIENT_SRCS) vmm/control/control_proto.c vmm/control/control_client.c api/proto/agent_tar.c api/proto/gz_stream.c
$(BUILD)/kiln-runtime: $(KILN_RUNTIME_SRCS:%.c=$(BUILD)/obj/%.o) $(BASE_LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(JANSSON_LIBS) $(ZLIB_LIBS) $(SECCOMP_LIBS)

# kiln, the CLI (docs/cli.md): a libcurl client of kilnd's socket;
# cp's directory archives are the agent's tar (api/proto) in gzip.
KILN_CLI_SRCS := $(wildcard api/kiln/*.c) api/proto/gz_stream.c api/proto/agent_tar.c api/proto/agent_proto.c api/proto/agent_proto_ctr.c api/proto/agent_proto_sec.c api/proto/agent_proto_seccomp.c
$(BUILD)/kiln: $(KILN_CLI_SRCS:%.c=$(BUILD)/obj/%.o) $(BASE_LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(CURL_LIBS) $(JANSSON_LIBS) $(ZLIB_LIBS) -lpthread

# Cheap when cached: the script keys the cache on source version + config.
kernel:
	@kernel-config/build-kernel $(BUILD)/kernel

OCI_INIT := $(BUILD)/rootfs/oci-init.cpio
rootfs: $(ROOTFS) $(OCI_INIT)
$(ROOTFS): $(BUILD)/kiln-init rootfs/build-minimal
	rootfs/build-minimal $(BUILD)/kiln-init $(BUILD)/rootfs

# kiln-runtime's initramfs: the static kiln-init as /init and nothing else
# (kiln.oci: it moves to a tmpfs root, and each container's root is a
# virtio-fs share; docs/guest.md). Deterministic: fixed owner and mtime.
$(OCI_INIT): $(BUILD)/kiln-init
	@mkdir -p $(dir $@) $@.d
	install -m 0755 -s $< $@.d/init
	touch -d @0 $@.d/init $@.d
	(cd $@.d && printf '.\ninit\n' | cpio -o -H newc -R 0:0 --reproducible --quiet) >$@.tmp
	rm -rf $@.d
	mv $@.tmp $@

# The test image: minimal + guest-side test and bench tools (tests/guest/,
# bench/guest/).
GUEST_TOOLS := $(BUILD)/tests/kiln-vsock-test $(BUILD)/tests/kiln-udp-flood $(BUILD)/tests/kiln-bench-guest \
	$(BUILD)/tests/kiln-ws-echo $(BUILD)/tests/kiln-euid $(BUILD)/tests/kiln-bench-get
$(BUILD)/tests/kiln-%: tests/guest/kiln-%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -static -o $@ $<
$(BUILD)/tests/kiln-bench-guest: bench/guest/kiln-bench-guest.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -static -o $@ $<
# bench/egress's HTTP(S) client: OpenSSL linked in statically (ld warns that
# getaddrinfo and OpenSSL's dlopen want shared libraries at run time: the
# guest resolves with glibc's built-in DNS and loads no OpenSSL module).
$(BUILD)/tests/kiln-bench-get: bench/guest/kiln-bench-get.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -static -o $@ $< -lssl -lcrypto

# bench/density's other half: forks of one snapshot through libkiln in one
# process, no kilnd (bench/host/kiln-density.c, public headers only).
$(BUILD)/bench/kiln-density: bench/host/kiln-density.c $(BUILD)/libkiln.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libkiln.a $(LIBKILN_LIBS) -lpthread

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
# The fuzz targets' lists the same way (build/fuzz-links.mk, below).
UNIT_LINKS := $(BUILD)/unit-links.mk
FUZZ_LINKS := $(BUILD)/fuzz-links.mk
ifneq ($(BUILDING),)
-include $(UNIT_LINKS) $(FUZZ_LINKS)
endif
$(BUILD)/%-links.mk: scripts/unit-links $(shell find lib libkiln vmm devices guest-init api tests/unit tests/fuzz -name '*.[ch]' 2>/dev/null)
	@mkdir -p $(dir $@)
	@scripts/unit-links --dir tests/$* > $@.tmp && mv $@.tmp $@

$(BUILD)/obj-san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -c $< -o $@

# the importer's archive reader is libarchive's
$(BUILD)/tests/test_import_archive: LIBS += $(ARCHIVE_LIBS)
# libcrypto for the tests and fuzz targets whose modules reach lib/tlsmint
# (their lists, read from build/*-links.mk above); libssl for the one
# that makes TLS handshakes with the minted leaves
tlsmint_users = $(foreach t,$(1),$(if $(filter lib/tlsmint/%,$($(t)_SRCS)),$(t)))
$(patsubst %,$(BUILD)/tests/%,$(call tlsmint_users,$(notdir $(UNIT_TESTS)))): LIBS += $(CRYPTO_LIBS)
$(patsubst %,$(BUILD)/fuzz/bin/%,$(call tlsmint_users,$(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))): \
	LIBS += $(CRYPTO_LIBS)
$(BUILD)/tests/test_tls_leaf: LIBS += $(SSL_LIBS)

.SECONDEXPANSION:
unit_objs = $(addprefix $(BUILD)/obj-san/,$(patsubst %.c,%.o,$($(1)_SRCS)))
$(BUILD)/tests/%: tests/unit/%.c $(UNIT_LINKS) $$(call unit_objs,$$*)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -o $@ $< $(filter %.o,$^) $(CMOCKA_LIBS) $(JANSSON_LIBS) $(ZLIB_LIBS) $(SECCOMP_LIBS) -lpthread $(NETTLE_LIBS) $(LIBS)

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
# -Iinclude and the GNU extension: a target of libkiln's public API
# (fuzz_devspec) links libkiln whole, the VM core included, whose
# KVM_GET_MSRS buffer is struct kvm_msrs followed by its entries.
FUZZ_CFLAGS := -O1 -g -std=gnu11 -D_GNU_SOURCE $(WARN) -MMD -MP -I. -Iinclude -fno-omit-frame-pointer \
	-Wno-gnu-variable-sized-type-not-at-end -Wno-missing-field-initializers -fsanitize=address,undefined -fno-sanitize-recover=all
# A single allocation above 64 MiB is a finding: a guest or a client must
# not make kiln allocate without bound (DESIGN rule 3).
FUZZ_RUN_FLAGS ?= -rss_limit_mb=1024 -malloc_limit_mb=64 -timeout=10 -print_final_stats=1
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/bin/fuzz_%)

$(BUILD)/obj-fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

fuzz_objs = $(addprefix $(BUILD)/obj-fuzz/,$(patsubst %.c,%.o,$($(1)_SRCS)))
$(BUILD)/fuzz/bin/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LINKS) $$(call fuzz_objs,fuzz_$$*)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(filter %.o,$^) $(JANSSON_LIBS) $(ZLIB_LIBS) $(SECCOMP_LIBS) -lpthread $(NETTLE_LIBS) $(LIBS)

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

# docs/openapi.yaml against the route table, docs/api.md's examples, the
# SDKs, the CLI's bodies, the endpoint files and a running build/kilnd (no
# guest; stdlib Python, seconds; in `make unit` too).
# tests/unit/api_spec_test says what each check reads.
api-spec: $(BUILD)/kilnd
	@tests/unit/run tests/unit/api_spec_test

# Each SDK's unit tests (against a fake kilnd socket) are one executable
# that prints cmocka's summary lines.
SDK_UNIT_TESTS := $(wildcard sdk/*/tests/unit_test)

# The unit tests (several binaries at once, the slowest started first:
# tests/unit/run), then every fuzz corpus replayed and each target fuzzed
# FUZZ_CHECK_SECONDS fresh, one target per CPU at a time.
unit: layers $(UNIT_TESTS) $(BUILD)/$(LIBKILN_SONAME) $(BUILD)/libkiln.a $(BUILD)/kiln.pc $(HOST_PROGRAMS) \
	$(BUILD)/kiln-init $(FUZZ_BINS) $(BUILD)/tests/kiln-escape-importer
	@tests/unit/run tests/unit/kilnd_restart_test tests/unit/kilnd_egress_proxy_test tests/unit/kiln_egress_test tests/unit/kilnd_zygote_test tests/unit/kilnd_jail_files_test tests/escape/importer_test tests/unit/image_import_test tests/unit/kiln_cli_socket_test tests/unit/kiln_runtime_test tests/unit/check_layers_test tests/unit/newcomer_test \
		tests/unit/kilnd_http_test tests/unit/kilnd_shares_test tests/unit/kilnd_secrets_test tests/unit/kilnd_templates_test tests/unit/kilnd_preview_test tests/unit/public_headers_test tests/unit/exports_test tests/unit/libkiln_pc_test \
		tests/unit/hardening_test tests/unit/state_dir_lock_test tests/unit/api_spec_test tests/bench/test_boot_profile.py tests/bench/test_targets.py tests/bench/test_procmem.py tests/bench/test_egress_report.py $(SDK_UNIT_TESTS) $(UNIT_TESTS)
	@tests/fuzz/check $(BUILD) $(FUZZ_CHECK_SECONDS) $(FUZZ_TARGETS)

# The Debian image's test joins in when its base is cached (seconds to
# build from there); `make test-debian` builds it if need be and runs only it.
# Without hardware KVM the tests are split over one one-vCPU outer VM per
# host CPU (tests/harness/shards; KILN_TEST_SHARDS=1 for a single one).
integration: all $(BUILD)/tests/triple-fault.elf $(BUILD)/tests/kiln-escape $(BUILD)/tests/kiln-escape-importer $(TEST_ROOTFS)
	@if rootfs/build-debian --cached-only $(BUILD)/kiln-init $(BUILD)/rootfs; then \
		export KILN_DEBIAN_IMAGE=$(BUILD)/rootfs/debian.ext4; \
	else echo "integration: no cached Debian base: its test is left out (make test-debian)"; fi; \
	KILN_HARNESS_STALL=240 KILN_HARNESS_RETRIES=8 tests/harness/shards

# Not in make test: SOAK_MINUTES (30) of a real kilnd under random load
# with chaos (tests/soak/run, docs/testing.md); one vCPU outer VM.
soak: all $(TEST_ROOTFS)
	KILN_HARNESS_SMP=1 KILN_HARNESS_STALL=1200 tests/harness/run \
		--timeout $$(( ($${SOAK_MINUTES:-30} + 30) * 60 )) tests/soak/run

test-debian: all image-debian
	KILN_DEBIAN_IMAGE=$(BUILD)/rootfs/debian.ext4 KILN_TEST_DEBIAN_TEMPLATE=1 KILN_TEST_FILTER=debian KILN_HARNESS_STALL=240 \
		tests/harness/run tests/integration/run-all

# Builds use every CPU (CI calls plain `make test`); integration's outer
# VMs (tests/harness/shards) are not make jobs, so -j speeds only its builds.
NPROC := $(shell nproc 2>/dev/null || echo 2)
test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@$(MAKE) --no-print-directory -j$(NPROC) unit
	@$(MAKE) --no-print-directory -j$(NPROC) integration

demo: deps
	@$(MAKE) --no-print-directory all
	tests/harness/run --timeout 900 bench/demo

bench: bench-boot bench-devices bench-agent bench-api bench-images bench-snapshot bench-density bench-net bench-egress bench-http bench-sdk
	@bench/targets

# The performance targets' table from the last boot, snapshot, devices and density results
# (build/bench/*.json); `make bench` prints it last.
bench-targets:
	@bench/targets

bench-boot: deps
	@$(MAKE) --no-print-directory all
	tests/harness/run bench/boot

# The benchmarks run in the nested harness with the test image, one rule:
# the agent's exec and files, kilnd's API, the exec round trip through the
# raw socket, each SDK and the CLI (sdk), importing a generated ~200 MiB
# OCI image through kilnd (images, no guest boots), checkpoint, restore
# and fork (snapshot), guest<->host TCP (net), HTTP(S) through the egress
# proxy against the packet filter alone (egress).
HARNESS_BENCHES := agent api sdk images snapshot net egress
$(HARNESS_BENCHES:%=bench-%): bench-%: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS)
	tests/harness/run --timeout $(if $(filter snapshot net,$*),2400,1800) bench/$*

# kiln-runtime under Podman against crun and a bare kiln-vmm boot (bench/oci).
bench-oci: deps
	@$(MAKE) --no-print-directory all
	tests/harness/run --timeout 1800 bench/oci

# N sandboxes forked from one template, through kilnd and through libkiln in
# one process (bench/density): on the Debian image (python3) when its base
# is cached (`make image-debian` builds it), else on the test image.
bench-density: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS) $(BUILD)/bench/kiln-density
	@if rootfs/build-debian --cached-only $(BUILD)/kiln-init $(BUILD)/rootfs; then \
		export KILN_DEBIAN_IMAGE=$(BUILD)/rootfs/debian.ext4; \
	else echo "bench-density: no cached Debian base: the test image instead (make image-debian builds it)"; fi; \
	tests/harness/run --timeout 1800 bench/density

# kilnd's HTTP layer on this host, no guest (KILN_BENCH_KILND_BASE=other-kilnd compares).
bench-http: deps
	@$(MAKE) --no-print-directory $(BUILD)/kilnd
	bench/http

# The confinement's cost (docs/security.md): create and wake against the tree
# before it (CONFINEMENT_BASE, a commit), built in build/baseline/.
CONFINEMENT_BASE ?= 4003e21
.PHONY: bench-confinement
bench-confinement: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS)
	@rm -rf $(BUILD)/baseline/src && mkdir -p $(BUILD)/baseline/src
	git archive $(CONFINEMENT_BASE) | tar -x -C $(BUILD)/baseline/src
	$(MAKE) --no-print-directory -C $(BUILD)/baseline/src build/kilnd build/kiln-vmm
	KILN_BENCH_BASELINE=$(BUILD)/baseline/src/build tests/harness/run --timeout 2400 bench/confinement

# Both VMMs boot kiln's kernel + virtio-9p here (QEMU's shared directory).
bench-devices: deps
	@$(MAKE) --no-print-directory all $(TEST_ROOTFS)
	@kernel-config/build-kernel $(BUILD)/kernel-9p kernel-config/bench-9p.config
	tests/harness/run --timeout 2400 bench/devices

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/obj-san $(BUILD)/obj-pic $(BUILD)/obj-fuzz $(BUILD)/tests $(BUILD)/fuzz/bin -name '*.d' 2>/dev/null)

# A PVH guest that triple-faults at once (tests/integration/triple_fault.S).
$(BUILD)/tests/triple-fault.elf: tests/integration/triple_fault.S
	@mkdir -p $(dir $@)
	$(CC) -c -o $@.o $<
	$(LD) -m elf_x86_64 --no-warn-rwx-segments -N -Ttext=0x100000 -o $@ $@.o
