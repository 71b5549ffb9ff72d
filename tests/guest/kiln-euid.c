/*
 * kiln-euid: a guest-side helper for kiln's confinement test (only in the
 * test image): prints the real and effective uid it runs with.
 *
 *   kiln-euid          ->  "ruid 1000 euid 1000"
 *
 * The test makes a set-uid-root copy of it in /workspace as guest root and
 * runs that confined: "euid 0" would be a process out of its confinement.
 * busybox cannot stand in: run set-uid, it drops the privilege itself.
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	printf("ruid %u euid %u\n", (unsigned)getuid(), (unsigned)geteuid());
	return 0;
}
