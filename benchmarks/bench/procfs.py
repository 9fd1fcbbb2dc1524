"""Memory probes of the current process from /proc (Linux); no heavy imports, for worker processes."""


def status_kb(field):
    """A field of /proc/self/status in kB (-1 if absent)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def vm_hwm_gb():
    """Peak resident memory of this process since its exec (VmHWM), in GB (NaN if absent)."""
    kb = status_kb("VmHWM")
    return kb / 2**20 if kb >= 0 else float("nan")


def reset_peak():
    """Reset VmHWM to the current RSS (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False
