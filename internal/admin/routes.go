package admin

import (
	"net/http"

	"github.com/formd/formd/internal/accounts"
)

// registerConsole adds the routes of the owner's console's API: every
// page's reads and actions are here too.
func (h *Handler) registerConsole(mux Mux) {
	mux.Handle("GET /v1/admin/openapi.json", http.HandlerFunc(serveOpenAPI))
	mux.Handle("GET /v1/admin/forms/{form}/stats", h.route(accounts.Read, true, h.formStats))
	mux.Handle("GET /v1/admin/forms/{form}/chart", h.route(accounts.Read, true, h.formChart))
	mux.Handle("GET /v1/admin/forms/{form}/definition", h.route(accounts.Read, true, h.definition))
	mux.Handle("POST /v1/admin/forms/{form}/open", h.route(accounts.Act, true, h.openForm))
	mux.Handle("POST /v1/admin/forms/{form}/close", h.route(accounts.Act, true, h.closeForm))
	mux.Handle("GET /v1/admin/forms/{form}/submissions", h.route(accounts.Read, true, h.submissions))
	mux.Handle("GET /v1/admin/forms/{form}/entries/{id}", h.route(accounts.Read, true, h.entry))
	mux.Handle("POST /v1/admin/forms/{form}/entries/{id}/redeliver", h.route(accounts.Act, true, h.redeliver))
	mux.Handle("GET /v1/admin/forms/{form}/proof", h.route(accounts.Read, true, h.proof))
	mux.Handle("POST /v1/admin/audit", h.route(accounts.Read, false, h.startAudit))
	mux.Handle("POST /v1/admin/replay", h.route(accounts.Read, false, h.startReplay))
	mux.Handle("GET /v1/admin/jobs/{id}", h.route(accounts.Read, false, h.job))
	mux.Handle("GET /v1/admin/accounts", h.route(accounts.ManageAccounts, false, h.listAccounts))
	mux.Handle("POST /v1/admin/accounts", h.route(accounts.ManageAccounts, false, h.addAccount))
	mux.Handle("POST /v1/admin/accounts/{id}/role", h.route(accounts.ManageAccounts, false, h.changeRole))
	mux.Handle("POST /v1/admin/accounts/{id}/disable", h.route(accounts.ManageAccounts, false, h.disableAccount))
	mux.Handle("POST /v1/admin/accounts/{id}/enable", h.route(accounts.ManageAccounts, false, h.enableAccount))
	mux.Handle("POST /v1/admin/accounts/{id}/tokens", h.route(accounts.Read, false, h.createToken))
	mux.Handle("GET /v1/admin/tokens", h.route(accounts.Read, false, h.listTokens))
	mux.Handle("POST /v1/admin/tokens/{id}/revoke", h.route(accounts.Read, false, h.revokeToken))
	mux.Handle("GET /v1/admin/audit-log", h.route(accounts.Read, false, h.auditLog))
	h.registerParticipants(mux)
	mux.Handle("POST /v1/admin/me/password", h.route(accounts.Read, false, h.changePassword))
	mux.Handle("POST /v1/admin/me/sign-out-everywhere", h.route(accounts.Read, false, h.signOutEverywhere))
	mux.Handle("POST /v1/admin/accounts/{id}/reset-link", h.route(accounts.ManageAccounts, false, h.resetLink))
}
