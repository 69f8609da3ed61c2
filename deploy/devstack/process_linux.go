package devstack

import "syscall"

func setGroupAttrs(a *syscall.SysProcAttr) {
	a.Setpgid = true
	a.Pdeathsig = syscall.SIGKILL
}
