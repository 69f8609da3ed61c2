//go:build unix && !linux

package devstack

import "syscall"

// Pdeathsig is Linux-only; elsewhere a killed supervisor may leave children.
func setGroupAttrs(a *syscall.SysProcAttr) {
	a.Setpgid = true
}
