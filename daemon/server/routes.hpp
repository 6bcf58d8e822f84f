// Internal: the routes behind handle_request (api.cpp) that live in their own files — the page's files (page.cpp),
// browser sessions (session.cpp), the daemon's status and the live event stream (live.cpp). Plain functions over plain
// values, on the io thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "faultline/server.hpp"

namespace faultline::server_detail {

HttpResponse json_response(unsigned status, std::string body);
HttpResponse error_response(unsigned status, std::string_view message);

// page.cpp — "/" (and "/index.html"), "/page.css", "/page.js"; nullopt for any other path. They hold no data, so
// they are served without a token; a strict Content-Security-Policy allows only their own script and style.
std::optional<HttpResponse> page_file(std::string_view path);

// session.cpp — who may read the API: a bearer token (API clients) or a session cookie (browsers).
inline constexpr std::string_view kSessionCookie = "faultline_session";
inline constexpr Duration kSessionLifetime = std::chrono::hours(12);
bool bearer_ok(std::string_view authorization, const std::string& token);
// The cookie's value: "v1.<expiry, unix s>.<HMAC-SHA256 of 'v1.<expiry>' keyed by the token, hex>". Stateless: a new
// token ends every session.
std::string make_session(const std::string& token, Time now);
bool session_ok(std::string_view cookie_header, const std::string& token, Time now);
// A state-changing request from a browser must come from the page itself: Sec-Fetch-Site, when sent, is
// "same-origin"; Origin, when sent, names the host the request was sent to.
bool same_origin(const HttpRequest& request);
// POST /login (form field `token`) and POST /logout.
HttpResponse login(const HttpRequest& request, const ApiContext& context, Time now);
HttpResponse logout(const HttpRequest& request, const ApiContext& context, Time now);
// GET /api/v1/session: whether a token is needed and whether this request carries one. Never 401, so the page can
// ask before it shows the login form.
HttpResponse session_state(const HttpRequest& request, const ApiContext& context, Time now);

// live.cpp — GET /api/v1/status: version, reading activity, incident totals and a change marker that grows with every
// update of the view; GET /api/v1/events: the same object as a Server-Sent Event whenever it changes.
std::string status_json(const ApiContext& context, Time now);
HttpResponse status_response(const ApiContext& context, Time now);
HttpResponse event_stream(const ApiContext& context);

}  // namespace faultline::server_detail
