/*
 * A PVH "kernel" that triple-faults on its first instruction: kiln-vmm
 * enters it with an empty IDT (limit 0), so the #UD from ud2 escalates to
 * a double fault and then to a shutdown, which kiln-vmm must report.
 */
	.section .note.Xen, "a", @note
	.balign 4
	.long 4          /* namesz: "Xen\0" */
	.long 4          /* descsz */
	.long 18         /* XEN_ELFNOTE_PHYS32_ENTRY */
	.asciz "Xen"
	.long _start

	.text
	.code32
	.globl _start
_start:
	ud2
