/* Close every descriptor but 0..2 and a few; see fd_close.h. */
#include "lib/base/fd_close.h"

#include <sys/syscall.h>
#include <unistd.h>

void fd_close_except(int *keep, size_t n)
{
	unsigned from = 3;

	/* Sorted, so the gaps between them are ranges (n is a handful). */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j] < keep[j - 1]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int)from)
			continue;
		if ((unsigned)keep[i] > from)
			syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0U);
		from = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, from, ~0U, 0U);
}
