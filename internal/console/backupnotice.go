package console

import "time"

// backupNotice is the last scheduled backup's failure, shown on every
// page to whoever is signed in until a backup succeeds again.
type backupNotice struct {
	At     time.Time
	Reason string
}

func init() {
	enStrings["backup.failed"] = "The last scheduled backup failed (%s): %s. Until one succeeds, the newest backup is older than the schedule says; the server's log has the details."
	zhStrings["backup.failed"] = "最近一次定时备份失败（%s）：%s。在备份重新成功之前，最新的备份比计划的旧；详情见服务器日志。"
}

// backupNotice reads the schedule's last failure, when the server has a
// schedule (BackupFailure set).
func (h *Handler) backupNotice() *backupNotice {
	if h.BackupFailure == nil {
		return nil
	}
	at, reason, failed := h.BackupFailure()
	if !failed {
		return nil
	}
	return &backupNotice{At: at, Reason: reason}
}
