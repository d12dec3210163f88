package hosted

// The hosted page's texts for files sent through the SDK's resumable
// uploads: the uploading state and the upload problems the SDK says more
// about (data-code-* on the status element), in both languages, as
// messages.js has them for other pages. init adds them to the tables.
var uploadStrings = map[string][2]string{
	"uploading":                {"Uploading… {percent} %", "上传中… {percent}%"},
	"code.file-rejected":       {"The form does not accept this type of file (the type is found from the bytes, not the name).", "此表单不接受这种类型的文件（类型按文件内容判断，而不是文件名）。"},
	"code.payload-too-large":   {"The file is larger than this form accepts.", "文件超过此表单允许的大小。"},
	"code.upload-already-used": {"A file of this submission was already sent with another one: choose the file again.", "此提交中的文件已随另一份提交发送：请重新选择文件。"},
	"code.upload-not-found":    {"The uploaded file is no longer on the server: choose the file again.", "服务器上已没有上传的文件：请重新选择文件。"},
	"code.upload-unavailable":  {"The server cannot store files right now: they stay on this device and are sent again shortly.", "服务器暂时无法保存文件：文件保留在本机，稍后会自动重新发送。"},
	"code.upload-storage-full": {"The server has no room for files right now: they stay on this device and are sent again shortly.", "服务器暂时没有空间保存文件：文件保留在本机，稍后会自动重新发送。"},
	"code.scan-unavailable":    {"The file cannot be checked for viruses right now: it is sent again shortly.", "文件暂时无法进行病毒检查：稍后会自动重新发送。"},
	"code.file-infected":       {"The virus scanner found something in this file, and it was not kept: choose another file.", "病毒扫描在此文件中发现问题，文件未保存：请选择其他文件。"},
	"code.upload-file-lost":    {"The file is no longer on this device: choose it again.", "文件已不在本机：请重新选择。"},
}

// uploadCodes are the problem codes with a data-code-* text, in a fixed
// order so the page is the same from one render to the next.
var uploadCodes = []string{
	"file-rejected", "payload-too-large", "upload-already-used", "upload-not-found", "upload-unavailable",
	"upload-storage-full", "scan-unavailable", "file-infected", "upload-file-lost",
}

func init() {
	for k, v := range uploadStrings {
		enStrings[k], zhStrings[k] = v[0], v[1]
	}
	// The SDK's field errors for files, as for every other code.
	zhErrors["file-rejected"], zhErrors["file-too-large"] = "不接受这种类型的文件。", "文件太大。"
}
