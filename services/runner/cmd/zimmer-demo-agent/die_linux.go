package main

import (
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dieBy ends the process by sig, as the kernel reports it to the parent
// (WIFSIGNALED), which is what the runner must tell apart from an exit.
// Go's runtime handles most signals itself (a SIGSEGV sent by kill prints a
// stack dump and exits with status 2), so the disposition is first reset to the
// default with rt_sigaction — an all-zero struct sigaction is SIG_DFL with
// no flags and an empty mask on every Linux architecture — and the signal is
// then sent to this very thread. No core file is written for a scripted crash.
func dieBy(sig syscall.Signal) {
	// A limit of 1 byte stops a core dump whether core_pattern names a file
	// (below the minimum dump size) or a pipe (the kernel's "no dump" value).
	if unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 1, Max: 1}) != nil {
		_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	}
	var dfl [4]uint64 // kernel struct sigaction: handler, flags, restorer, mask
	// SIGKILL and SIGSTOP refuse a new disposition; they need none.
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	runtime.LockOSThread()
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
	// A signal whose default is to be ignored (SIGCHLD…) or to stop lands here.
	time.Sleep(100 * time.Millisecond)
}
