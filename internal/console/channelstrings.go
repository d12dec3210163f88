package console

// The chat robots' editor's texts, English and Chinese.
func init() {
	for k, v := range map[string]string{
		"chan.title": "Chat robots: %s", "tab.channels": "Chat robots",
		"chan.intro": "Robots post a message to a Slack, WeCom (企业微信), DingTalk (钉钉) or Feishu/Lark (飞书) group when an entry arrives or changes: the form's name, what happened, the entry's number and time. Saving publishes a new version of the form, as the builder does.",
		"chan.list":  "This form's robots", "chan.none": "No chat robots yet.",
		"chan.kind": "Platform", "chan.kind.slack": "Slack", "chan.kind.wecom": "WeCom (企业微信)", "chan.kind.dingtalk": "DingTalk (钉钉)", "chan.kind.feishu": "Feishu/Lark (飞书)",
		"chan.url": "Robot URL", "chan.url-help": "Copy it from the group's robot settings. It holds the robot's token: only owners see it whole.",
		"chan.secret": "Signing secret", "chan.secret-help": "DingTalk (加签, starting SEC) and Feishu sign each message; Slack and WeCom robots have no secret, leave it empty.",
		"chan.secret-kept": "A secret is set: leave this empty to keep it.", "chan.secret-set": "set (hidden)", "chan.secret-none": "none",
		"chan.fields": "Personal data in the messages", "chan.fields-help": "None by default: a message names the form and the entry, never what a person entered. Tick only the fields the group may read.",
		"chan.fields-none": "none",
		"chan.save":        "Save and publish", "chan.remove": "Remove this robot", "chan.add-title": "Add a robot", "chan.add": "Add and publish",
		"chan.confirm":  "Confirm and publish",
		"chan.invalid":  "Not published: fix what is marked below.",
		"chan.draft":    "The builder has an unpublished draft of this form; publish or discard it before changing the robots here, so that neither change is lost.",
		"done.chan-add": "The robot is added and the form published.", "done.chan-save": "The robot is changed and the form published.",
		"done.chan-remove": "The robot is removed and the form published.",
	} {
		enStrings[k] = v
	}
	for k, v := range map[string]string{
		"chan.title": "群机器人：%s", "tab.channels": "群机器人",
		"chan.intro": "有新条目或条目有变化时，机器人向 Slack、企业微信、钉钉或飞书群发一条消息：表单名称、发生了什么、条目编号和时间。保存即发布表单的新版本，与表单编辑器相同。",
		"chan.list":  "此表单的机器人", "chan.none": "还没有群机器人。",
		"chan.kind": "平台", "chan.kind.slack": "Slack", "chan.kind.wecom": "企业微信", "chan.kind.dingtalk": "钉钉", "chan.kind.feishu": "飞书",
		"chan.url": "机器人地址", "chan.url-help": "从群机器人设置中复制。地址中含有机器人的令牌，只有所有者能看到完整地址。",
		"chan.secret": "签名密钥", "chan.secret-help": "钉钉（加签，以 SEC 开头）和飞书会为每条消息签名；Slack 和企业微信机器人没有密钥，请留空。",
		"chan.secret-kept": "已设置密钥：留空即保持不变。", "chan.secret-set": "已设置（隐藏）", "chan.secret-none": "无",
		"chan.fields": "消息中的个人信息", "chan.fields-help": "默认不含：消息只写表单和条目，不写任何人填写的内容。只勾选群里可以看到的字段。",
		"chan.fields-none": "无",
		"chan.save":        "保存并发布", "chan.remove": "删除此机器人", "chan.add-title": "添加机器人", "chan.add": "添加并发布",
		"chan.confirm":  "确认并发布",
		"chan.invalid":  "未发布：请修改下面标出的地方。",
		"chan.draft":    "表单编辑器中有此表单未发布的草稿；请先发布或放弃草稿，再在这里修改机器人，以免丢失任何一方的修改。",
		"done.chan-add": "机器人已添加，表单已发布。", "done.chan-save": "机器人已修改，表单已发布。",
		"done.chan-remove": "机器人已删除，表单已发布。",
	} {
		zhStrings[k] = v
	}
}
