#include "textflag.h"

// func rawOpen(path *byte) int64
TEXT ·rawOpen(SB),NOSPLIT,$0-16
	MOVQ	$257, AX	// SYS_openat
	MOVQ	$-100, DI	// AT_FDCWD
	MOVQ	path+0(FP), SI
	MOVQ	$0, DX		// O_RDONLY
	MOVQ	$0, R10
	SYSCALL
	MOVQ	AX, ret+8(FP)
	RET
