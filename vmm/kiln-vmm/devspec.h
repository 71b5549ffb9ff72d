/*
 * devspec: kiln-vmm's device options, its own command-line syntax, parsed
 * into libkiln's typed device calls (include/kiln/vm.h, "devices"):
 *
 *   --disk PATH[,ro][,overlay=PATH[,size=MIB]][,serial=ID]
 *   --share HOSTDIR:TAG[:ro]   or   --share fd=N:TAG[:ro]
 *   --vsock PATH[,cid=N]
 *   --net tap=NAME[,mac=aa:bb:cc:dd:ee:ff][,ip=ADDR/PREFIX]
 *   --net passt[,mac=MAC][,ip=ADDR/PREFIX][,gw=ADDR][,dns=ADDR][,resolver=ADDR]
 *   --net-rate tx_bytes=N,tx_packets=N,rx_bytes=N,rx_packets=N  (per second)
 *
 * and the same disk with one value per option, for a program that builds
 * kiln-vmm's command line from paths it does not control (kilnd): no
 * separator in a path is ever read as one.
 *
 *   --disk-image PATH [--disk-overlay PATH] [--disk-size MIB]
 *   --vsock-path PATH
 *
 * The syntax is checked here, the values by libkiln (the rules every
 * caller meets). Each call returns 0 or -errno with a one-line reason in
 * `e`: this file's ("--disk: ...") or libkiln's ("net gw=...: ...").
 * `spec` is not modified: libkiln copies what it keeps. An option that is
 * several calls (a disk, then its size and serial) may leave its first
 * ones in the config when a later one is refused: kiln-vmm stops at the
 * first refused option and never uses that config.
 */
#ifndef KILN_VMM_DEVSPEC_H
#define KILN_VMM_DEVSPEC_H

#include <stdint.h>

#include <kiln/vm.h>

#include "lib/base/err.h"

/* What the options said so far, across options. */
struct devspec_state {
	unsigned ndisk;   /* disks added: the next one's index */
	int vsock;        /* --vsock given */
	uint64_t rate[4]; /* --net-rate's values: fields not given keep theirs */
	/* The --disk-image being built (path NULL: none); added to the
	 * config by the next disk option or devspec_finish. */
	const char *image, *overlay;
	uint64_t size_mib;
};

int devspec_disk(kiln_vm_config *cfg, struct devspec_state *st, const char *spec, struct err *e);
/* *fd: N for fd=N (a descriptor the program must keep open), else -1. */
int devspec_share(kiln_vm_config *cfg, const char *spec, int *fd, struct err *e);
/* --share-remote SOCK:TAG[:ro]: a client-served share. */
int devspec_share_remote(kiln_vm_config *cfg, const char *spec, struct err *e);
int devspec_vsock(kiln_vm_config *cfg, struct devspec_state *st, const char *spec, struct err *e);
int devspec_net(kiln_vm_config *cfg, const char *spec, struct err *e);
int devspec_net_rate(kiln_vm_config *cfg, struct devspec_state *st, const char *spec,
		     struct err *e);

/* --disk-image PATH: a new disk on PATH, taken whole. */
int devspec_disk_image(kiln_vm_config *cfg, struct devspec_state *st, const char *path,
		       struct err *e);
/* --disk-overlay PATH, --disk-size MIB: of the last --disk-image. */
int devspec_disk_overlay(struct devspec_state *st, const char *path, struct err *e);
int devspec_disk_size(struct devspec_state *st, const char *mib, struct err *e);
/* --vsock-path PATH: the vsock device on PATH, taken whole, CID 3. */
int devspec_vsock_path(kiln_vm_config *cfg, struct devspec_state *st, const char *path,
		       struct err *e);
/* After the last option: the pending --disk-image into the config. */
int devspec_finish(kiln_vm_config *cfg, struct devspec_state *st, struct err *e);

#endif
