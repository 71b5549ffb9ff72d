/*
 * keeper: the parent of one kiln-vmm, outliving kilnd (docs/architecture.md,
 * "Sandboxes across kilnd restarts"). kilnd runs it as a hidden mode of
 * its own binary, `kilnd --keeper ARGS`, from the monitor thread's
 * forked child (which may only exec: kilnd has threads).
 *
 * Arguments (written by supervise.c, refused whole when malformed):
 *   --dir DIR        the sandbox's directory: console.log, vmm.log (and
 *                    their ".1"), keeper.sock and vmm.exit are made there
 *   --grace S        with no kilnd connected for S seconds, SIGTERM the
 *                    VMM (SIGKILL KEEPER_KILL_AFTER_S later); 0: never
 *   --ready-fd N     a pipe: "ok\n" once kiln-vmm runs, or
 *                    "err <errno> <step>\n"; then closed
 *   --cgroup-fd N    the VMM's cgroup.procs, written by its child (optional)
 *   --pidns          kiln-vmm as pid 1 of a new pid namespace (its jail)
 *   --keep N         a descriptor kiln-vmm inherits (repeatable)
 *   --park           instead of --dir: a zygote (supervision/zygote.h).
 *                    kiln-vmm (`kiln-vmm --park FD`) starts at once; the
 *                    ready descriptor is then a SOCK_SEQPACKET socket on
 *                    which the keeper sends the hello (keeper_proto.h)
 *                    and waits for one claim naming the sandbox's
 *                    directory, with its descriptor and, optionally, the
 *                    sandbox cgroup's cgroup.procs. Claimed, the keeper
 *                    (the VMM's parent, which has not reaped it: the pid
 *                    is the VMM's) writes the VMM's pid into that cgroup,
 *                    gives both back nice 0 under --park-nice, and goes on
 *                    as with --dir (logs, keeper.sock, "ok\n"); kilnd
 *                    sends kiln-vmm its command line only then. The
 *                    socket's end, a bad claim or the VMM's end first
 *                    kill and reap the VMM, and the keeper exits 0 having
 *                    written nothing anywhere
 *   --park-nice      parked at nice 19, the keeper and its VMM (root only:
 *                    only root can give nice 0 back)
 *   -- ARGV...       kiln-vmm's argv (ARGV[0] its path)
 *
 * Contract:
 *  - Single-threaded; its own session; stdin, stdout and stderr
 *    /dev/null (its own complaints go into vmm.log as "kiln-keeper: ").
 *  - kiln-vmm gets /dev/null as stdin, its stdout and stderr on pipes
 *    the keeper copies into console.log and vmm.log, each capped at
 *    KEEPER_LOG_CAP bytes plus one rotated ".1" file, default signal
 *    dispositions, an empty mask, and no descriptor but the --keep ones.
 *  - keeper.sock (mode 0600) serves one client at a time, the newest:
 *    each gets the hello (keeper_proto.h); when kiln-vmm ended the
 *    keeper reaps it, writes vmm.exit (temporary file + rename), sends
 *    the same line to the client and exits 0. It reads nothing from a
 *    client: signals come from kilnd through a pidfd.
 *  - The sandbox directory removed (its link count 0): the VMM is
 *    stopped at once, as after the grace period.
 */
#ifndef KILN_KEEPER_H
#define KILN_KEEPER_H

#define KEEPER_LOG_CAP (1u << 20)
#define KEEPER_KILL_AFTER_S 10
/* kilnd's default --keeper-grace. */
#define KEEPER_GRACE_DEFAULT_S 600

/* argv[0] is "--keeper"; the rest as above. The process's exit status. */
int keeper_main(int argc, char **argv);

#endif
