"""Training data for the error-payload classifier, generated from templates with a seeded RNG.

    python3 models/error-classifier/generate.py [--seed 20261129] [--out models/error-classifier/train.jsonl]

Vendors and formats used here: Stripe-like, GitHub-like, AWS-like (JSON and S3 XML), Google-API-like,
Aliyun-like, WeChat-like, generic JSON envelopes (English and Chinese), OAuth, Spring Boot, nginx and
Cloudflare HTML pages, Java and Python stack traces, plain text. The held-out evaluation set
(eval.jsonl) is hand-written from other vendors and formats (see eval.jsonl's `source` field) and is
never read here.

`network_issue` (issue 15) is a gateway, proxy, DNS or connection failure as the body reports it: a
proxy's or CDN's own error page (nginx/openresty, Cloudflare 52x, CloudFront, ELB, HAProxy, Traefik,
whatever its 502/503/504 code), service-mesh and API-gateway upstream errors (Envoy "upstream connect
error or disconnect/reset before headers", "no healthy upstream", Kong "An invalid response was
received from the upstream server"), refused or reset connections and failed name lookups in Node, Go,
Java, Python and curl. `timeout` stays the body that says an operation, read or request timed out.

A body with control characters (raw or JSON-escaped) or U+FFFD inside its fields is `data_corrupted`:
the data arrived damaged. A body in the wrong format or content type (HTML where JSON was expected, a
parser's syntax error, 415) is `malformed`. A JSON body cut short (`truncated_json`: success bodies and,
less often, error envelopes of every kind, cut inside the data) is `data_corrupted`. A bag of n-grams
alone sees only the missing closing bracket, and with it short intact bodies looked cut; the
featurizer's structural signal (`s:json_cut` vs `s:json_ok`, models/featurize.py) tells them apart.

Labels (see models/README.md for the full definitions):
ok, auth_failed, rate_limited, not_found, server_error, malformed, data_corrupted, timeout, network_issue, unknown.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from featurize import json_shape  # noqa: E402
from vendor_bodies import OK_REAL, for_label  # noqa: E402
from damage import UNKNOWN_TEMPLATES, damage_templates, framework_validation, xml_templates  # noqa: E402
from common import Example, Gen, combo, dumps, envelope, generate_examples, generator_main, random_json, random_object, random_prose, random_xml  # noqa: E402

LABELS = ["ok", "auth_failed", "rate_limited", "not_found", "server_error", "malformed", "data_corrupted", "timeout", "network_issue", "unknown"]
PER_LABEL = 1500
DEFAULT_SEED = 20261129

RESOURCES = ["customer", "order", "invoice", "charge", "subscription", "product", "user", "shipment", "payment", "account", "file", "bucket", "record", "ticket", "claim", "report"]
PATHS = ["/v1/orders", "/api/v2/customers", "/v3/invoices", "/internal/shipping/track", "/api/users/me", "/v1/payments", "/graph/items", "/api/v1/claims", "/billing/statements", "/crm/contacts"]
HOSTS = ["api.acme.io", "orders.internal", "gateway.shop.local", "payments.example.com", "crm.corp.net", "svc-billing.prod", "edge-03.cdn.net"]
CN_RES = ["订单", "用户", "客户", "商品", "发票", "资源", "文件", "账户", "记录", "工单", "报销单", "接口"]
JAVA_PKGS = ["com.acme.orders", "io.shop.billing", "org.corp.crm", "com.example.payments", "net.logistics.track"]
PY_MODS = ["app/views/orders.py", "service/billing.py", "api/handlers/customer.py", "workers/sync.py", "core/db.py"]


def rid(g: Gen) -> str:
    return g.pick([g.uuid(), "req_" + g.alnum(14), g.hex(16), g.alnum(24).upper()])


def status_prefix(g: Gen, code: int, reason: str) -> str:
    return g.pick(["", "", "", f"HTTP/1.1 {code} {reason}\n\n", f"{code} {reason}: ", f"status={code} body="])


# --------------------------------------------------------------------------------------------- ok

def ok_order(g: Gen) -> str:
    return dumps(g, {"order_id": f"O-{g.digits(8)}", "status": g.pick(["shipped", "processing", "delivered", "pending", "cancelled"]), "total": round(g.int(100, 99999) / 100, 2), "currency": g.pick(["USD", "EUR", "CNY", "GBP"]), "items": [{"sku": g.alnum(6).upper(), "qty": g.int(1, 5)} for _ in range(g.int(1, 3))], "created_at": g.iso_ts()})


def ok_customer(g: Gen) -> str:
    return dumps(g, {"id": g.pick(["cus_", "c_", "usr_"]) + g.alnum(12), "name": g.pick(["Alice Chen", "Bob Smith", "王小明", "Maria García", "Li Wei", "John Doe"]), "email": g.pick(["alice", "bob", "ops", "li.wei"]) + "@example.com", "tier": g.pick(["gold", "silver", "bronze", "platinum"]), "created": g.int(1600000000, 1800000000)})


def ok_list(g: Gen) -> str:
    kind = g.pick(RESOURCES)
    return dumps(g, {"object": "list", "data": [{"id": f"{kind[:3]}_{g.alnum(10)}", "object": kind, "amount": g.int(100, 50000)} for _ in range(g.int(1, 3))], "has_more": g.chance(0.5), "url": f"/v1/{kind}s"})


def ok_envelope(g: Gen) -> str:
    data = g.pick([
        {"tracking": f"1Z{g.alnum(16).upper()}", "carrier": g.pick(["DHL", "UPS", "SF Express", "FedEx"]), "eta": g.date()},
        {"balance": g.int(0, 100000) / 100, "currency": "USD"},
        {"invoice_no": f"INV-{g.int(2020, 2027)}-{g.digits(4)}", "amount": g.int(100, 9999), "paid": True},
        {"claim_id": f"EC-{g.digits(6)}", "state": g.pick(["approved", "submitted", "paid"]), "amount": g.int(10, 5000)},
        {"user": {"id": g.int(1, 99999), "roles": ["viewer"]}},
    ])
    env = g.pick([
        {"status": "ok", "data": data},
        {"success": True, "data": data, "error": None},
        {"code": 0, "message": "success", "data": data},
        {"code": 200, "msg": "操作成功", "data": data},
        {"result": data, "errors": []},
        {"ok": True, "result": data},
        {"errcode": 0, "errmsg": "ok", **data},
        {"code": "0000", "msg": "成功", "data": data, "requestId": rid(g)},
    ])
    return dumps(g, env)


def ok_health(g: Gen) -> str:
    return g.pick([
        dumps(g, {"status": g.pick(["UP", "ok", "healthy", "pass"]), "components": {"db": {"status": "UP"}, "diskSpace": {"status": "UP"}}}),
        g.pick(["OK", "ok", "pong", "healthy", "SUCCESS", "success"]),
        dumps(g, {"status": "ok", "version": f"{g.int(1, 9)}.{g.int(0, 20)}.{g.int(0, 9)}", "commit": g.hex(7)}),
    ])


def ok_cn(g: Gen) -> str:
    return dumps(g, g.pick([
        {"code": 0, "msg": "查询成功", "data": {"订单号": f"O-{g.digits(8)}", "状态": g.pick(["已发货", "运输中", "已签收", "待付款"]), "金额": g.int(10, 9999)}},
        {"success": True, "message": "请求成功", "result": {"客户名称": g.pick(["上海某某贸易有限公司", "张伟", "李娜"]), "等级": g.pick(["VIP", "普通"])}},
        {"status": "success", "data": {"物流公司": g.pick(["顺丰速运", "中通快递", "京东物流"]), "运单号": g.pick(["SF", "ZT", "JD"]) + g.digits(12), "最新动态": g.pick(["快件已到达【杭州转运中心】", "派送中", "已签收，签收人：本人"])}},
    ]))


def ok_misc(g: Gen) -> str:
    return dumps(g, g.pick([
        {"id": f"evt_{g.alnum(14)}", "type": g.pick(["charge.succeeded", "invoice.paid", "customer.created"]), "livemode": g.chance(0.5), "created": g.int(1600000000, 1800000000)},
        {"items": [{"id": g.int(1, 9999), "title": g.pick(["Blue mug", "Desk lamp", "Notebook", "USB-C cable"]), "price": g.int(1, 500)} for _ in range(g.int(1, 4))], "page": g.int(1, 9), "total": g.int(10, 900)},
        {"temperature": g.int(-10, 40), "unit": "C", "city": g.pick(["Berlin", "Shanghai", "Austin"]), "observed_at": g.iso_ts()},
        {"access_token": "eyJ" + g.alnum(30), "token_type": "Bearer", "expires_in": g.pick([3600, 7200, 86400])},
        {"deleted": True, "id": f"{g.pick(RESOURCES)[:3]}_{g.alnum(10)}"},
        {"rows": [[g.int(1, 100), g.pick(["a", "b", "c"])] for _ in range(g.int(1, 4))], "columns": ["n", "k"]},
    ]))


# ---------------------------------------------------------------------------------- auth_failed

def auth_stripe(g: Gen) -> str:
    k = g.pick(["sk_live_", "sk_test_", "rk_live_"]) + "*" * g.int(4, 20) + g.alnum(4)
    code, msg = g.pick([
        ("api_key_expired", f"Expired API Key provided: {k}"),
        ("invalid_api_key", f"Invalid API Key provided: {k}"),
        (None, "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth."),
        ("secret_key_required", "This API call cannot be made with a publishable API key."),
    ])
    err = {"type": "invalid_request_error", "message": msg}
    if code:
        err["code"] = code
    return status_prefix(g, 401, "Unauthorized") + dumps(g, {"error": err})


def auth_github(g: Gen) -> str:
    return dumps(g, g.pick([
        {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
        {"message": "Requires authentication", "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user"},
        {"message": "Resource not accessible by integration", "status": "403"},
        {"message": "Must have admin rights to Repository.", "documentation_url": "https://docs.github.com/rest"},
    ]))


def auth_aws(g: Gen) -> str:
    if g.chance(0.4):
        code, msg = g.pick([
            ("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."),
            ("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method."),
            ("AccessDenied", "Access Denied"),
            ("ExpiredToken", "The provided token has expired."),
        ])
        return f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{msg}</Message><RequestId>{g.alnum(16).upper()}</RequestId><HostId>{g.alnum(40)}</HostId></Error>'
    t, msg = g.pick([
        ("UnrecognizedClientException", "The security token included in the request is invalid."),
        ("ExpiredTokenException", "The security token included in the request is expired"),
        ("AccessDeniedException", f"User: arn:aws:iam::{g.digits(12)}:user/ci is not authorized to perform: dynamodb:PutItem on resource: table/orders"),
        ("InvalidSignatureException", "Signature expired: 20260101T000000Z is now earlier than 20260101T000500Z"),
        ("MissingAuthenticationTokenException", "Missing Authentication Token"),
    ])
    return dumps(g, g.pick([{"__type": t, "message": msg}, {"__type": "com.amazon.coral.service#" + t, "Message": msg}, {"message": msg}]))


def auth_google(g: Gen) -> str:
    code, status, msg = g.pick([
        (401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."),
        (403, "PERMISSION_DENIED", "The caller does not have permission"),
        (401, "UNAUTHENTICATED", "Request is missing required authentication credential."),
        (400, "INVALID_ARGUMENT", "API key expired. Please renew the API key."),
        (403, "PERMISSION_DENIED", "API key not valid. Please pass a valid API key."),
    ])
    return dumps(g, {"error": {"code": code, "message": msg, "status": status}})


def auth_oauth(g: Gen) -> str:
    return dumps(g, g.pick([
        {"error": "invalid_token", "error_description": g.pick(["The access token expired", "Token is expired", "The access token provided is invalid", "Access token has been revoked"])},
        {"error": "invalid_grant", "error_description": g.pick(["Refresh token expired", "Invalid refresh token", "Token has been expired or revoked."])},
        {"error": "invalid_client", "error_description": "Client authentication failed"},
        {"error": "unauthorized_client"},
    ]))


def auth_generic(g: Gen) -> str:
    msg = g.pick([
        "token expired", "Token has expired", "JWT expired at " + g.iso_ts() + ". Current time: " + g.iso_ts(), "jwt expired", "invalid token", "Invalid API key",
        "API key is invalid or has been revoked", "Unauthorized", "authentication required", "Authentication failed", "Invalid credentials", "session expired, please log in again",
        "access token is missing or invalid", "Your credentials are incorrect or have expired", "Forbidden: insufficient scope", "permission denied for this resource",
        "signature verification failed", "user is not authenticated", "Login required", "invalid bearer token", "expired access token", "authorization header missing",
        "The API key you supplied has been disabled", "Not authorized to access this endpoint", "token is no longer valid",
    ])
    k = g.r.random()
    status = g.pick([401, 403, 200, 401, 401])
    if k < 0.25:
        return dumps(g, {"error": {"code": status, "message": msg}})
    if k < 0.45:
        return dumps(g, {"status": status, "error": g.pick(["Unauthorized", "Forbidden", "auth_error"]), "message": msg, "path": g.pick(PATHS)})
    if k < 0.6:
        return dumps(g, {"code": g.pick([200, 0, 401, 1001, 40101]), "success": False, "message": msg})
    if k < 0.7:
        return dumps(g, {"errors": [{"code": g.pick(["unauthorized", "AUTH_001", "token_expired", "forbidden"]), "detail": msg}]})
    if k < 0.8:
        return f"{status} {g.pick(['Unauthorized', 'Forbidden'])}: {msg}"
    if k < 0.9:
        return dumps(g, {"status": "error", "data": None, "message": msg})
    return msg


def auth_cn(g: Gen) -> str:
    msg = g.pick([
        "登录过期，请重新登录", "登录已过期", "token已过期", "token失效，请重新获取", "令牌已过期", "无效的token", "未登录或登录已超时", "会话已过期，请重新登录",
        "用户未授权", "未授权访问", "鉴权失败", "身份验证失败", "签名验证失败", "签名错误", "AccessKey无效", "无权限访问该资源", "权限不足", "账号或密码错误",
        "API密钥无效", "用户身份已失效", "请先登录", "认证信息缺失", "access_token无效或已过期",
    ])
    return g.pick([
        dumps(g, {"code": g.pick([401, 403, 10001, 40001, 2001, 200, -1]), "msg": msg}),
        dumps(g, {"code": g.pick([401, 403, 10001]), "message": msg, "data": None}),
        dumps(g, {"success": False, "errorCode": g.pick(["AUTH_EXPIRED", "UNAUTHORIZED", "TOKEN_INVALID", "E401"]), "errorMsg": msg}),
        dumps(g, {"status": 200, "result": None, "error": msg}),
        msg,
    ])


def auth_aliyun(g: Gen) -> str:
    code, msg = g.pick([
        ("InvalidAccessKeyId.NotFound", "Specified access key is not found."),
        ("SignatureDoesNotMatch", "Specified signature is not matched with our calculation."),
        ("Forbidden.RAM", "User not authorized to operate on the specified resource, or this API doesn't support RAM."),
        ("InvalidSecurityToken.Expired", "Specified SecurityToken is expired."),
        ("IncompleteSignature", "The request signature does not conform to Aliyun standards."),
    ])
    return dumps(g, {"RequestId": g.uuid().upper(), "HostId": g.pick(["ecs.aliyuncs.com", "oss-cn-hangzhou.aliyuncs.com"]), "Code": code, "Message": msg})


def auth_wechat(g: Gen) -> str:
    code, msg = g.pick([
        (40001, "invalid credential, access_token is invalid or not latest"),
        (42001, "access_token expired"),
        (40014, "invalid access_token"),
        (41001, "access_token missing"),
        (40125, "invalid appsecret"),
    ])
    return dumps(g, {"errcode": code, "errmsg": f"{msg} rid: {g.hex(8)}-{g.hex(8)}-{g.hex(8)}"})


def auth_html(g: Gen) -> str:
    code, reason = g.pick([(401, "Unauthorized"), (403, "Forbidden"), (401, "Authorization Required")])
    return f"<html>\r\n<head><title>{code} {reason}</title></head>\r\n<body>\r\n<center><h1>{code} {reason}</h1></center>\r\n<hr><center>nginx/1.{g.int(18, 27)}.{g.int(0, 9)}</center>\r\n</body>\r\n</html>"


# --------------------------------------------------------------------------------- rate_limited

def rl_stripe(g: Gen) -> str:
    return dumps(g, {"error": {"type": g.pick(["rate_limit_error", "invalid_request_error"]), "code": "rate_limit", "message": g.pick(["Too many requests hit the API too quickly. We recommend an exponential backoff of your requests.", "Request rate limit exceeded."])}})


def rl_github(g: Gen) -> str:
    return dumps(g, g.pick([
        {"message": f"API rate limit exceeded for {g.ip()}. (But here's the good news: Authenticated requests get a higher rate limit.)", "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"},
        {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", "documentation_url": "https://docs.github.com/rest"},
        {"message": f"API rate limit exceeded for user ID {g.digits(7)}."},
    ]))


def rl_aws(g: Gen) -> str:
    if g.chance(0.3):
        return f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>{g.alnum(16).upper()}</RequestId></Error>'
    t, msg = g.pick([
        ("ThrottlingException", "Rate exceeded"),
        ("TooManyRequestsException", "Too Many Requests"),
        ("ProvisionedThroughputExceededException", "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."),
        ("RequestLimitExceeded", "Request limit exceeded."),
        ("LimitExceededException", "Rate exceeded for operation PutRecord"),
    ])
    return dumps(g, {"__type": t, "message": msg})


def rl_google(g: Gen) -> str:
    return dumps(g, {"error": {"code": 429, "message": g.pick([f"Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute per user' of service 'sheets.googleapis.com' for consumer 'project_number:{g.digits(12)}'.", "Resource has been exhausted (e.g. check quota).", "Rate Limit Exceeded", "User Rate Limit Exceeded"]), "status": "RESOURCE_EXHAUSTED"}})


def rl_generic(g: Gen) -> str:
    s = g.int(1, 120)
    msg = g.pick([
        "Too Many Requests", "too many requests", f"Rate limit exceeded. Try again in {s} seconds.", f"rate limited, retry after {s}s", "Request was throttled.",
        f"You have exceeded the limit of {g.pick([60, 100, 1000, 5000])} requests per {g.pick(['minute', 'hour', 'day'])}", "throttled", "API quota exceeded", "Rate limit reached for requests",
        "Daily request quota exhausted", "Slow down: request rate too high", "limit exceeded, please back off", "Too many attempts. Please wait before retrying.",
        f"rate_limit_exceeded: {g.int(2, 50)} requests per second allowed", "concurrency limit reached",
    ])
    k = g.r.random()
    if k < 0.3:
        return dumps(g, {"error": {"code": 429, "message": msg}})
    if k < 0.5:
        return dumps(g, {"status": 429, "error": "Too Many Requests", "message": msg, "retry_after": s})
    if k < 0.65:
        return dumps(g, {"code": g.pick(["RATE_LIMITED", "TOO_MANY_REQUESTS", "429", "throttle"]), "message": msg})
    if k < 0.8:
        return f"HTTP/1.1 429 Too Many Requests\nRetry-After: {s}\nX-RateLimit-Remaining: 0\n\n{msg}"
    return msg


def rl_cn(g: Gen) -> str:
    msg = g.pick([
        "请求过于频繁，请稍后再试", "访问频率超限", "接口调用次数已达上限", "调用频率过高，请降低请求频率", "请求太频繁了", "超出每分钟调用次数限制", "今日调用次数已用完",
        "触发限流，请稍后重试", "访问过于频繁，请1分钟后再试", "请求次数超过限制", "流量控制：请求被拒绝", "QPS超限",
    ])
    return g.pick([
        dumps(g, {"code": g.pick([429, 10029, 42900, 503]), "msg": msg}),
        dumps(g, {"success": False, "errorCode": g.pick(["TOO_MANY_REQUESTS", "RATE_LIMIT", "Throttling"]), "errorMsg": msg}),
        dumps(g, {"Code": g.pick(["Throttling.User", "Throttling", "Throttling.Api"]), "Message": g.pick(["Request was denied due to user flow control.", "Request was denied due to api flow control.", msg]), "RequestId": g.uuid().upper()}),
        dumps(g, {"errcode": g.pick([45009, 45011, 45033]), "errmsg": g.pick(["reach max api daily quota limit", "api minute-quota reach limit  mustslower  retry next minute", "api freq out of limit"])}),
        msg,
    ])


def rl_html(g: Gen) -> str:
    if g.chance(0.5):
        return f"<html>\r\n<head><title>429 Too Many Requests</title></head>\r\n<body>\r\n<center><h1>429 Too Many Requests</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>"
    return f'<!DOCTYPE html>\n<html class="no-js" lang="en-US"><head><title>Access denied | {g.pick(HOSTS)} used Cloudflare to restrict access</title></head><body><div id="cf-wrapper"><h1><span class="cf-error-type">Error</span> <span class="cf-error-code">1015</span></h1><h2 class="cf-subheadline">You are being rate limited</h2><p>The owner of this website has banned you temporarily from accessing this website.</p><span>Cloudflare Ray ID: <strong>{g.hex(16)}</strong></span></div></body></html>'


# ------------------------------------------------------------------------------------ not_found

def nf_stripe(g: Gen) -> str:
    res = g.pick(["customer", "charge", "invoice", "price", "payment_intent", "subscription"])
    return dumps(g, {"error": {"code": "resource_missing", "doc_url": "https://stripe.com/docs/error-codes/resource-missing", "message": f"No such {res}: '{res[:3]}_{g.alnum(14)}'", "param": "id", "type": "invalid_request_error"}})


def nf_github(g: Gen) -> str:
    return dumps(g, {"message": "Not Found", "documentation_url": g.pick(["https://docs.github.com/rest/repos/repos#get-a-repository", "https://docs.github.com/rest/issues/issues#get-an-issue", "https://docs.github.com/rest"])})


def nf_aws(g: Gen) -> str:
    if g.chance(0.4):
        code, msg = g.pick([("NoSuchKey", "The specified key does not exist."), ("NoSuchBucket", "The specified bucket does not exist"), ("NoSuchUpload", "The specified upload does not exist.")])
        return f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{msg}</Message><Key>{g.pick(["exports/", "invoices/", "img/"])}{g.alnum(8)}.{g.pick(["csv", "pdf", "png"])}</Key><RequestId>{g.alnum(16).upper()}</RequestId></Error>'
    t, msg = g.pick([
        ("ResourceNotFoundException", "Requested resource not found"),
        ("ResourceNotFoundException", f"Function not found: arn:aws:lambda:us-east-1:{g.digits(12)}:function:order-sync"),
        ("NoSuchEntityException", "The user with name ci-deployer cannot be found."),
        ("NotFoundException", "Invalid stage identifier specified"),
    ])
    return dumps(g, {"__type": t, "message": msg})


def nf_google(g: Gen) -> str:
    return dumps(g, {"error": {"code": 404, "message": g.pick(["Requested entity was not found.", f"File not found: {g.alnum(20)}.", "The requested URL was not found on this server.", "Not found: Dataset project:orders_ds"]), "status": "NOT_FOUND"}})


def nf_generic(g: Gen) -> str:
    res = g.pick(RESOURCES)
    ident = g.pick([f"O-{g.digits(8)}", str(g.int(1, 999999)), g.uuid(), f"{res[:3]}_{g.alnum(8)}"])
    msg = g.pick([
        f"{res.capitalize()} not found", f"{res} {ident} not found", f"No {res} found with id {ident}", f"The requested {res} does not exist", "Not Found", "not found",
        f"Unknown {res}: {ident}", f"{res} with id '{ident}' was not found", "The requested resource could not be found.", f"Could not find {res} {ident}",
        "Endpoint not found", f"Route {g.pick(PATHS)} not found", f"no such {res}", "resource does not exist", "404 page not found", "entity not found",
    ])
    k = g.r.random()
    if k < 0.25:
        return dumps(g, {"error": {"code": 404, "message": msg}})
    if k < 0.45:
        return dumps(g, {"timestamp": g.iso_ts(), "status": 404, "error": "Not Found", "message": msg, "path": g.pick(PATHS) + "/" + ident})
    if k < 0.6:
        return dumps(g, {"code": g.pick(["NOT_FOUND", "RESOURCE_NOT_FOUND", "E404", "not_found"]), "message": msg})
    if k < 0.7:
        return dumps(g, {"success": False, "error": "not_found", "detail": msg})
    if k < 0.8:
        return f"404 Not Found: {msg}"
    return msg


def nf_cn(g: Gen) -> str:
    res = g.pick(CN_RES)
    msg = g.pick([f"{res}不存在", f"未找到该{res}", f"{res}信息不存在", f"查询的{res}不存在或已被删除", "资源不存在", "请求的资源未找到", "404 页面不存在", f"找不到指定的{res}", f"{res}已删除", "记录不存在", "接口地址不存在"])
    return g.pick([
        dumps(g, {"code": g.pick([404, 40400, 1004, 20004]), "msg": msg}),
        dumps(g, {"success": False, "errorCode": g.pick(["NOT_FOUND", "RESOURCE_NOT_EXIST", "DATA_NOT_FOUND"]), "errorMsg": msg}),
        dumps(g, {"Code": g.pick(["InvalidInstanceId.NotFound", "EntityNotExist.User", "NoSuchKey", "InvalidOrderId.NotFound"]), "Message": g.pick(["The specified instance is not found.", "The user does not exist.", "The specified key does not exist.", msg]), "RequestId": g.uuid().upper()}),
        dumps(g, {"errcode": g.pick([46004, 40003, 60111]), "errmsg": g.pick(["not existed user", "invalid openid", "userid not found"])}),
        msg,
    ])


def nf_html(g: Gen) -> str:
    if g.chance(0.6):
        return f"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx/1.{g.int(18, 27)}.{g.int(0, 9)}</center>\r\n</body>\r\n</html>"
    return f'<!doctype html><html lang="en"><head><title>HTTP Status 404 – Not Found</title><style type="text/css">body {{font-family:Tahoma,Arial,sans-serif;}}</style></head><body><h1>HTTP Status 404 – Not Found</h1><hr class="line" /><p><b>Type</b> Status Report</p><p><b>Message</b> {g.pick(PATHS)}/{g.int(1, 9999)}</p><p><b>Description</b> The origin server did not find a current representation for the target resource or is not willing to disclose that one exists.</p><hr class="line" /><h3>Apache Tomcat/9.0.{g.int(40, 90)}</h3></body></html>'


# --------------------------------------------------------------------------------- server_error

def java_trace(g: Gen, exc: str, msg: str) -> str:
    pkg = g.pick(JAVA_PKGS)
    frames = "\n".join(f"\tat {pkg}.{g.pick(['service', 'web', 'repo', 'core'])}.{g.pick(['OrderService', 'InvoiceController', 'CustomerRepository', 'PaymentHandler'])}.{g.pick(['process', 'handle', 'find', 'apply', 'lambda$run$0'])}({g.pick(['OrderService', 'InvoiceController', 'Main'])}.java:{g.int(20, 400)})" for _ in range(g.int(2, 6)))
    return f"{exc}: {msg}\n{frames}\n\tat org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:{g.int(800, 900)})"


def py_trace(g: Gen, exc: str, msg: str) -> str:
    frames = "\n".join(f'  File "/srv/{g.pick(PY_MODS)}", line {g.int(10, 500)}, in {g.pick(["handle", "get_order", "process", "run", "_fetch", "wrapper"])}\n    {g.pick(["return self._impl(request)", "result = compute(order)", "row = cursor.fetchone()", "data = client.get(url)"])}' for _ in range(g.int(1, 4)))
    return f"Traceback (most recent call last):\n{frames}\n{exc}: {msg}"


def se_trace(g: Gen) -> str:
    if g.chance(0.5):
        exc, msg = g.pick([
            ("java.lang.NullPointerException", 'Cannot invoke "String.length()" because "name" is null'),
            ("java.lang.IllegalStateException", "Failed to load ApplicationContext"),
            ("java.lang.OutOfMemoryError", "Java heap space"),
            ("java.lang.ArrayIndexOutOfBoundsException", f"Index {g.int(1, 9)} out of bounds for length {g.int(0, 1)}"),
            ("org.springframework.dao.DataAccessResourceFailureException", "Unable to acquire JDBC Connection"),
            ("java.lang.RuntimeException", "Unexpected error while processing request"),
        ])
        return java_trace(g, exc, msg)
    exc, msg = g.pick([
        ("KeyError", f"'{g.pick(['customer_id', 'items', 'total', 'user'])}'"),
        ("AttributeError", "'NoneType' object has no attribute 'id'"),
        ("ZeroDivisionError", "division by zero"),
        ("RuntimeError", "internal invariant violated"),
        ("MemoryError", ""),
        ("IndexError", "list index out of range"),
    ])
    return py_trace(g, exc, msg)


def se_spring(g: Gen) -> str:
    return dumps(g, {"timestamp": g.iso_ts(), "status": 500, "error": "Internal Server Error", "message": g.pick(["", "No message available", "Unexpected error", "could not execute statement"]), "path": g.pick(PATHS), "trace": g.pick(["", java_trace(g, "java.lang.NullPointerException", "null")])})


def se_nginx(g: Gen) -> str:
    code, reason = g.pick([(500, "Internal Server Error"), (503, "Service Temporarily Unavailable"), (503, "Service Unavailable"), (500, "Internal Server Error")])
    server = g.pick(["nginx", f"nginx/1.{g.int(18, 27)}.{g.int(0, 9)}", "openresty", f"openresty/1.{g.int(19, 25)}.{g.int(1, 9)}.1", "Tengine"])
    sep = g.pick(["\r\n", "\n", ""])
    return f"<html>{sep}<head><title>{code} {reason}</title></head>{sep}<body>{sep}<center><h1>{code} {reason}</h1></center>{sep}<hr><center>{server}</center>{sep}</body>{sep}</html>"


def se_cloudflare(g: Gen) -> str:
    code, title, sub = g.pick([
        (500, "Internal server error", "There is an unknown error on the web server."),
        (503, "Service unavailable", "The server is temporarily unable to handle the request."),
    ])
    return f'<!DOCTYPE html>\n<html lang="en-US"><head><title>{g.pick(HOSTS)} | {code}: {title}</title><meta charset="UTF-8" /></head><body><div id="cf-error-details"><h1><span class="inline-block">{title}</span><span class="code-label">Error code {code}</span></h1><div class="cf-section">{sub}</div><p>Please try again in a few minutes.</p><span>Cloudflare Ray ID: <strong>{g.hex(16)}</strong></span></div></body></html>'


def se_generic(g: Gen) -> str:
    msg = g.pick([
        "Internal Server Error", "internal error", "An internal error occurred. Please try again later.", "Unexpected error", "Something went wrong on our end", "Service Unavailable",
        "The service is temporarily unavailable", "server error", "unhandled exception", "The server is down for maintenance",
        "Backend service unavailable", "database connection failed", "Oops! An unexpected error occurred.", "Error processing request", "internal_server_error",
        "Service is overloaded, try again later", "crashed while handling request",
    ])
    code = g.pick([500, 500, 503, 500])
    k = g.r.random()
    if k < 0.3:
        return dumps(g, {"error": {"code": code, "message": msg, "request_id": rid(g)}})
    if k < 0.5:
        return dumps(g, {"status": code, "error": msg})
    if k < 0.6:
        return dumps(g, {"error": {"type": "api_error", "message": "An unknown error occurred" if g.chance(0.5) else msg}})
    if k < 0.7:
        return dumps(g, {"error": {"code": code, "message": g.pick(["Internal error encountered.", "The service is currently unavailable.", "Backend Error"]), "status": g.pick(["INTERNAL", "UNAVAILABLE"])}})
    if k < 0.8:
        return dumps(g, g.pick([{"__type": "InternalServerError", "message": "Internal server error"}, {"__type": "ServiceUnavailableException", "message": "Service is unavailable. Try again later."}, {"Code": "InternalError", "Message": "The request processing has failed due to some unknown error, exception or failure.", "RequestId": g.uuid().upper()}]))
    return f"{code} {g.pick(['Internal Server Error', 'Service Unavailable'])}" + g.pick(["", f": {msg}"])


def se_cn(g: Gen) -> str:
    msg = g.pick(["服务器内部错误", "系统繁忙，请稍后再试", "系统异常，请联系管理员", "服务暂时不可用", "服务器开小差了", "后端服务异常", "系统错误", "服务异常，请稍后重试", "内部服务错误", "数据库连接失败", "服务维护中，请稍后访问", "未知系统错误"])
    return g.pick([
        dumps(g, {"code": g.pick([500, 502, 503, 50000, -1, 9999]), "msg": msg}),
        dumps(g, {"success": False, "errorCode": g.pick(["SYSTEM_ERROR", "INTERNAL_ERROR", "E500", "SERVICE_UNAVAILABLE"]), "errorMsg": msg}),
        dumps(g, {"errcode": -1, "errmsg": "system error"}),
        dumps(g, {"Code": g.pick(["InternalError", "ServiceUnavailable", "UnknownError"]), "Message": g.pick(["The request processing has failed due to some unknown error.", "The request has failed due to a temporary failure of the server.", msg]), "RequestId": g.uuid().upper()}),
        msg,
    ])




def se_frameworks(g: Gen) -> str:
    """Crash output of Go, Node, Ruby/Rails, .NET, PHP and Django servers (issue 15: many servers)."""
    fn = g.pick(["handleOrder", "buildReport", "applyDiscount", "loadCustomer", "renderInvoice"])
    field = g.pick(["id", "customer", "items", "total", "address", "user"])
    return g.pick([
        f"panic: runtime error: {g.pick(['invalid memory address or nil pointer dereference', 'index out of range [3] with length 3', 'slice bounds out of range'])}\n\ngoroutine {g.int(1, 900)} [running]:\nmain.{fn}(0xc000{g.hex(6)})\n\t/app/{g.pick(['handlers', 'service'])}/{fn.lower()}.go:{g.int(10, 300)} +0x{g.hex(3)}",
        f"http: panic serving {g.ip()}:{g.int(30000, 60000)}: {g.pick(['assignment to entry in nil map', 'runtime error: integer divide by zero'])}",
        f"TypeError: Cannot read properties of {g.pick(['undefined', 'null'])} (reading '{field}')\n    at {fn} (/srv/app/{g.pick(['lib', 'src'])}/{fn}.js:{g.int(5, 200)}:{g.int(2, 40)})\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
        f"ReferenceError: {field}Id is not defined\n    at {fn} (/usr/src/app/index.js:{g.int(5, 200)}:{g.int(2, 40)})",
        f"NoMethodError (undefined method `{field}' for nil:NilClass):\n  app/{g.pick(['controllers', 'models', 'services'])}/{g.pick(['orders', 'invoices', 'users'])}_{g.pick(['controller', 'service'])}.rb:{g.int(5, 200)}:in `{g.pick(['show', 'create', 'call'])}'",
        f"ActiveRecord::StatementInvalid (PG::UndefinedColumn: ERROR:  column {field}_id does not exist)",
        f"We're sorry, but something went wrong (500)",
        f"System.{g.pick(['NullReferenceException', 'InvalidOperationException', 'ArgumentOutOfRangeException'])}: {g.pick(['Object reference not set to an instance of an object.', 'Sequence contains no matching element', 'Index was out of range.'])}\n   at Shop.Api.{g.pick(['OrdersController', 'InvoiceService'])}.{fn}() in /src/Shop.Api/{fn}.cs:line {g.int(10, 300)}",
        f"<br />\n<b>Fatal error</b>:  Uncaught {g.pick(['TypeError', 'Error'])}: {g.pick(['Argument 1 passed to', 'Call to undefined method'])} {fn}() in /var/www/app/{fn}.php:{g.int(5, 300)}",
        f"<!doctype html><html><head><title>Server Error (500)</title></head><body><h1>Server Error (500)</h1></body></html>",
        f"<!DOCTYPE html><html><head><title>{g.pick(['Application Error', 'Internal Server Error', 'Whoops! Something went wrong.'])}</title></head><body><iframe src=\"//www.herokucdn.com/error-pages/application-error.html\"></iframe></body></html>" if g.chance(0.5) else "<h1>Internal Server Error</h1><p>The server encountered an internal error and was unable to complete your request.</p>",
        f'<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><soap:Fault><faultcode>soap:Server</faultcode><faultstring>{g.pick(["Server was unable to process request.", "Internal processing error", "java.lang.NullPointerException"])}</faultstring></soap:Fault></soap:Body></soap:Envelope>',
    ])


def nf_frameworks(g: Gen) -> str:
    path = g.pick(PATHS) + g.pick(["", f"/{g.int(1, 99999)}", "/export"])
    method = g.pick(["GET", "POST", "PUT", "DELETE", "PATCH"])
    return g.pick([
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Error</title>\n</head>\n<body>\n<pre>Cannot {method} {path}</pre>\n</body>\n</html>',
        f'ActionController::RoutingError (No route matches [{method}] "{path}")',
        "404 page not found",
        f'{{"detail":"Not found."}}',
        f"<h1>Not Found</h1><p>The requested URL {path} was not found on this server.</p>",
        f'{{"timestamp":"{g.iso_ts()}","status":404,"error":"Not Found","path":"{path}"}}',
        f"No {g.pick(['customer', 'order', 'record', 'user'])} with {g.pick(['id', 'e-mail', 'reference'])} {g.pick(['matching', 'equal to'])} the given value exists",
    ])


# ------------------------------------------------------------------------------------ malformed

def mf_parse(g: Gen) -> str:
    pos = g.int(0, 900)
    return g.pick([
        f"Unexpected token < in JSON at position {pos}",
        f"SyntaxError: Unexpected token '<', \"<!DOCTYPE \"... is not valid JSON",
        f"JSONDecodeError: Expecting value: line 1 column {g.int(1, 80)} (char {pos})",
        f"json: cannot unmarshal string into Go struct field Order.total of type float64",
        f"com.fasterxml.jackson.core.JsonParseException: Unexpected character ('}}' (code 125)): was expecting double-quote to start field name\n at [Source: (String)\"{{\"a\":1,}}\"; line: 1, column: {g.int(2, 60)}]",
        f"invalid character '{g.pick(['}', ']', 'x', '<'])}' looking for beginning of value",
        f"Malformed JSON in request body",
        f"Failed to parse response body as JSON",
        f"Unterminated string in JSON at position {pos}",
        f"unexpected end of input at line 1 column {g.int(1, 300)}",
        f"Could not parse payload: invalid UTF-8 in header",
        f"lexical error: invalid char in json text.",
        f"yaml.scanner.ScannerError: mapping values are not allowed here in \"<unicode string>\", line {g.int(1, 40)}, column {g.int(1, 30)}",
        f"org.xml.sax.SAXParseException; lineNumber: {g.int(1, 50)}; columnNumber: {g.int(1, 80)}; The element type \"item\" must be terminated by the matching end-tag \"</item>\".",
    ])


def mf_validation(g: Gen) -> str:
    field = g.pick(["email", "amount", "currency", "order_id", "quantity", "date", "customer_id", "phone", "items", "address.zip"])
    msg = g.pick([
        f"Missing required parameter: {field}", f"missing required field '{field}'", f"Invalid value for '{field}'", f"'{field}' is required", f"{field} must be a valid {g.pick(['integer', 'string', 'date', 'email address', 'ISO 4217 code'])}",
        f"Invalid request: {field} is malformed", "Bad Request", "Invalid JSON payload received.", f"Unknown field \"{field}\"", f"{field}: expected number, got string",
        "request body failed schema validation", f"Parameter '{field}' has an invalid format", "Invalid parameter", "The request could not be understood by the server due to malformed syntax.",
    ])
    k = g.r.random()
    if k < 0.2:
        return dumps(g, {"error": {"type": "invalid_request_error", "code": g.pick(["parameter_missing", "parameter_invalid_integer", "parameter_invalid_empty", "parameter_unknown"]), "param": field, "message": msg}})
    if k < 0.35:
        return dumps(g, {"__type": g.pick(["ValidationException", "SerializationException", "InvalidParameterValueException"]), "message": g.pick([f"1 validation error detected: Value null at '{field}' failed to satisfy constraint: Member must not be null", "Start of structure or map found where not expected.", msg])})
    if k < 0.5:
        return dumps(g, {"error": {"code": 400, "message": g.pick([f"Invalid value at '{field}' (TYPE_STRING), \"abc\"", "Invalid JSON payload received. Unknown name \"foo\": Cannot find field.", msg]), "status": "INVALID_ARGUMENT"}})
    if k < 0.65:
        return dumps(g, {"status": 400, "error": "Bad Request", "message": msg, "errors": [{"field": field, "code": g.pick(["invalid", "missing", "type_mismatch"])}]})
    if k < 0.75:
        return dumps(g, {"message": "Validation Failed", "errors": [{"resource": "Issue", "field": field, "code": g.pick(["missing_field", "invalid"])}]})
    if k < 0.85:
        return f"400 Bad Request: {msg}"
    return msg


def mf_cn(g: Gen) -> str:
    field = g.pick(["手机号", "订单号", "金额", "日期", "邮箱", "商品ID", "收货地址", "用户名"])
    msg = g.pick(["参数错误", "请求参数格式不正确", f"缺少必填参数：{field}", f"{field}格式错误", "JSON格式错误", "非法的请求体", "请求数据解析失败", f"参数{field}不能为空", f"{field}不合法", "请求参数校验失败", "数据格式不正确", "无法解析返回结果"])
    return g.pick([
        dumps(g, {"code": g.pick([400, 40000, 1002, 10003]), "msg": msg}),
        dumps(g, {"success": False, "errorCode": g.pick(["PARAM_ERROR", "INVALID_PARAMETER", "BAD_REQUEST"]), "errorMsg": msg}),
        dumps(g, {"Code": g.pick(["InvalidParameter", "MissingParameter", "InvalidParameter.Format"]), "Message": g.pick(["The specified parameter is not valid.", "The input parameter that is mandatory for processing this request is not supplied.", msg]), "RequestId": g.uuid().upper()}),
        dumps(g, {"errcode": g.pick([40003, 44002, 47001]), "errmsg": g.pick(["data format error", "empty post data", "invalid param"])}),
        msg,
    ])


def mf_html_instead_of_json(g: Gen) -> str:
    return g.pick([
        "Expected JSON but received text/html: <!DOCTYPE html><html><head><title>Welcome</title></head>",
        f"Response is not valid JSON: '{g.pick(['<html>', 'OK', 'null,', '{{', '<?xml'])}'",
        "content-type mismatch: expected application/json, got text/plain",
    ])


# ------------------------------------------------------------------------------- data_corrupted

CN_SAMPLES = ["张伟", "北京市海淀区中关村大街", "订单已发货", "上海浦东新区", "请联系客服", "发票抬头", "广州市天河区", "测试数据"]
ACCENT_SAMPLES = ["Müller", "François", "Zürich Straße", "café crème", "Ærøskøbing", "São Paulo", "naïve résumé", "Łódź"]


def mojibake(g: Gen) -> str:
    src = g.pick(CN_SAMPLES + ACCENT_SAMPLES)
    raw = src.encode("utf-8")
    k = g.r.random()
    if k < 0.35:
        bad = raw.decode("cp1252", errors="replace")
    elif k < 0.6:
        bad = raw.decode("latin-1")
    elif k < 0.85:
        bad = raw.decode("gbk", errors="replace")
    else:
        bad = src.encode("gbk", errors="replace").decode("utf-8", errors="replace") if any(ord(c) > 0x3000 for c in src) else raw.decode("cp1252", errors="replace")
    return bad


def dc_encoding(g: Gen) -> str:
    fields = {g.pick(["name", "address", "city", "note", "title", "customer"]): mojibake(g) for _ in range(g.int(1, 3))}
    if g.chance(0.3):
        fields["id"] = g.int(1, 99999)
    return g.pick([dumps(g, fields), " ".join(fields_v for fields_v in map(str, fields.values()))])


def dc_integrity(g: Gen) -> str:
    a, b = g.hex(32), g.hex(32)
    return g.pick([
        f"checksum mismatch: expected {a}, got {b}",
        f"MD5 mismatch for {g.alnum(8)}.csv: expected {a} actual {b}",
        f"CRC32 check failed for segment {g.int(1, 500)}",
        f"crc error: stored={g.hex(8)} computed={g.hex(8)}",
        "gzip: stdin: invalid compressed data--crc error",
        "zlib.error: Error -3 while decompressing data: invalid distance too far back",
        "Data integrity error: record hash does not match",
        "database disk image is malformed",
        "sqlite3.DatabaseError: file is not a database",
        f"Corrupted block detected at offset {g.int(1000, 9999999)}",
        "java.util.zip.ZipException: invalid entry CRC (expected 0x" + g.hex(8) + " but got 0x" + g.hex(8) + ")",
        "corrupt data: the stored record failed verification",
        f"InnoDB: Database page corruption on disk or a failed file read of page [page id: space={g.int(1, 99)}, page number={g.int(1, 9999)}]",
        "payload signature digest does not match content (content altered in transit)",
        "snappy: corrupt input",
        "invalid byte sequence for encoding \"UTF8\": 0xe4 0xb8",
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
        f"row count mismatch after import: expected {g.int(1000, 9000)}, found {g.int(10, 999)}",
        "file is truncated or corrupted: unexpected EOF in archive",
        "The data in the response body is damaged and cannot be trusted",
    ])


def dc_aws(g: Gen) -> str:
    code, msg = g.pick([
        ("BadDigest", "The Content-MD5 you specified did not match what we received."),
        ("InvalidDigest", "The Content-MD5 you specified is not valid."),
        ("XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed."),
    ])
    if g.chance(0.5):
        return f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{msg}</Message><RequestId>{g.alnum(16).upper()}</RequestId></Error>'
    return dumps(g, {"error": {"code": code, "message": msg}})


def dc_cn(g: Gen) -> str:
    msg = g.pick(["数据校验失败", "数据已损坏", "文件损坏，无法读取", "校验和不匹配", "数据不一致，请核对", "MD5校验失败", "文件CRC校验错误", "数据完整性校验未通过", "存储的数据已损坏", "解压失败：压缩包已损坏", "报文签名与内容不符，数据可能被篡改", "字符编码错误，出现乱码"])
    return g.pick([
        dumps(g, {"code": g.pick([500, 422, 3001, 50010]), "msg": msg}),
        dumps(g, {"success": False, "errorCode": g.pick(["DATA_CORRUPTED", "CHECKSUM_ERROR", "INTEGRITY_ERROR"]), "errorMsg": msg}),
        dumps(g, {"Code": g.pick(["InvalidDigest", "FileDamaged", "ContentMD5Mismatch"]), "Message": msg, "RequestId": g.uuid().upper()}),
        msg,
    ])


def dc_garbage(g: Gen) -> str:
    k = g.r.random()
    if k < 0.4:
        return "".join(g.pick(["\ufffd", "\ufffd\ufffd", "\x00", "\x7f", "\u00ff", "\u00fe", "PK\x03\x04", "\x1f\x8b\x08", "ÿØÿà", "\ufffd\ufffdH"]) for _ in range(g.int(6, 30)))
    if k < 0.7:
        ok = ok_order(g)
        chars = list(ok)
        for _ in range(g.int(3, 15)):
            i = g.int(0, len(chars) - 1)
            chars[i] = g.pick(["\ufffd", "\x00", "\u00ff", "ï¿½"])
        return "".join(chars)
    return dumps(g, {g.pick(["name", "desc", "title"]): "\ufffd" * g.int(3, 12), "id": g.int(1, 9999)})


# -------------------------------------------------------------------------------------- timeout

def to_generic(g: Gen) -> str:
    ms = g.pick([1000, 2000, 3000, 5000, 10000, 30000, 60000])
    host = g.pick(HOSTS)
    msg = g.pick([
        "Request Timeout", "request timed out", f"Request timed out after {ms}ms", "The request timed out.", "timeout", "Connection timed out", "connect ETIMEDOUT",
        f"ESOCKETTIMEDOUT", "Read timed out", "socket timeout", "context deadline exceeded", f"operation timed out after {ms // 1000} seconds",
        f"timeout of {ms}ms exceeded", "deadline exceeded", "The server did not respond within the time limit", "query timeout",
        f"Timed out waiting for response from {host}", "idle timeout reached", "statement timeout", "canceling statement due to statement timeout",
    ])
    k = g.r.random()
    if k < 0.25:
        return dumps(g, {"error": {"code": g.pick([408, 504]), "message": msg}})
    if k < 0.4:
        return dumps(g, {"status": 408, "error": "Request Timeout", "message": msg})
    if k < 0.5:
        return dumps(g, {"error": {"code": 504, "message": g.pick(["Deadline expired before operation could complete.", "The request timed out."]), "status": "DEADLINE_EXCEEDED"}})
    if k < 0.6:
        return dumps(g, {"code": g.pick(["TIMEOUT", "ETIMEDOUT", "READ_TIMEOUT", "E408"]), "message": msg})
    if k < 0.7:
        return "408 Request Timeout" + g.pick(["", f": {msg}"])
    return msg


def to_trace(g: Gen) -> str:
    if g.chance(0.5):
        exc, msg = g.pick([
            ("java.net.SocketTimeoutException", g.pick(["Read timed out", "connect timed out", f"timeout"])),
            ("java.util.concurrent.TimeoutException", f"Timeout waiting for task after {g.int(1, 60)} s"),
            ("org.apache.http.conn.ConnectTimeoutException", f"Connect to {g.pick(HOSTS)}:443 failed: connect timed out"),
            ("io.netty.handler.timeout.ReadTimeoutException", "null"),
        ])
        return java_trace(g, exc, msg)
    exc, msg = g.pick([
        ("TimeoutError", "timed out"),
        ("socket.timeout", "timed out"),
        ("asyncio.exceptions.TimeoutError", ""),
        ("httpx.ConnectTimeout", f"timed out connecting to {g.pick(HOSTS)}"),
        ("urllib3.exceptions.ReadTimeoutError", f"HTTPSConnectionPool(host='{g.pick(HOSTS)}', port=443): Read timed out."),
    ])
    return py_trace(g, exc, msg)


def to_aws(g: Gen) -> str:
    if g.chance(0.5):
        return f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>RequestTimeout</Code><Message>Your socket connection to the server was not read from or written to within the timeout period. Idle connections will be closed.</Message><RequestId>{g.alnum(16).upper()}</RequestId></Error>'
    return dumps(g, {"__type": g.pick(["RequestTimeoutException", "TimeoutError", "GatewayTimeoutException"]), "message": g.pick(["Request timed out", "Endpoint request timed out", "Task timed out after 30.03 seconds"])})


def to_html(g: Gen) -> str:
    reason = g.pick(["Request Time-out", "Request Timeout"])
    return f"<html>\r\n<head><title>408 {reason}</title></head>\r\n<body>\r\n<center><h1>408 {reason}</h1></center>\r\n<hr><center>{g.pick(['nginx', 'Apache', 'openresty'])}</center>\r\n</body>\r\n</html>"


def to_cn(g: Gen) -> str:
    msg = g.pick(["请求超时", "连接超时", "服务响应超时，请稍后重试", "读取超时", "调用下游服务超时", "数据库查询超时", "接口超时", "处理超时，请重试", "等待响应超时"])
    return g.pick([
        dumps(g, {"code": g.pick([504, 408, 5004, -2]), "msg": msg}),
        dumps(g, {"success": False, "errorCode": g.pick(["TIMEOUT", "READ_TIMEOUT"]), "errorMsg": msg}),
        dumps(g, {"Code": g.pick(["RequestTimeout", "ServiceTimeout"]), "Message": g.pick(["The request has timed out.", msg]), "RequestId": g.uuid().upper()}),
        msg,
    ])



# -------------------------------------------------------------------------------- network_issue
# The proxy, CDN, mesh or client library says it could not reach (or keep) the upstream.

def port(g: Gen) -> int:
    return g.pick([80, 443, 8080, 8443, 3000, 5432, 6379, 9200, 50051, 3306])


def net_proxy_page(g: Gen) -> str:
    code, reason = g.pick([(502, "Bad Gateway"), (504, "Gateway Time-out"), (504, "Gateway Timeout"), (502, "Bad Gateway"), (503, "Service Temporarily Unavailable")])
    server = g.pick(["nginx", f"nginx/1.{g.int(18, 27)}.{g.int(0, 9)}", "openresty", f"openresty/1.{g.int(19, 25)}.{g.int(1, 9)}.1", "Tengine", "awselb/2.0", "cloudflare", "Microsoft-Azure-Application-Gateway/v2", "", "Traefik"])
    sep = g.pick(["\r\n", "\n", ""])
    tail = f"<hr><center>{server}</center>{sep}" if server else ""
    if code == 503 and server not in ("nginx", "openresty", "Tengine"):
        code, reason = 502, "Bad Gateway"
    return f"<html>{sep}<head><title>{code} {reason}</title></head>{sep}<body>{sep}<center><h1>{code} {reason}</h1></center>{sep}{tail}</body>{sep}</html>"


PROXY_TITLES = ["Bad Gateway", "502 Bad Gateway", "502 Proxy Error", "Proxy Error", "Gateway Timeout", "504 Gateway Timeout", "Backend fetch failed", "Service Unavailable - No upstream",
                "Upstream unavailable", "Origin unreachable", "Connection to origin failed", "ERROR: The requested URL could not be retrieved", "502 - Web server received an invalid response while acting as a gateway or proxy server.",
                "Error 502 (Server Error)", "Bad gateway - edge", "Host not reachable", "Unable to connect to the backend"]
PROXY_LINES = [
    "The proxy server received an invalid response from an upstream server.",
    "The server, while acting as a gateway or proxy, did not receive a valid response from the upstream server.",
    "The server, while acting as a gateway or proxy, did not receive a timely response from the upstream server.",
    "Reason: Error reading from remote server",
    "The proxy server could not handle the request. Reason: DNS lookup failure for: {host}",
    "There is a problem with the page you are looking for, and it cannot be displayed. When the Web server (while acting as a gateway or proxy) contacted the upstream content server, it received an invalid response from the content server.",
    "Guru Meditation: XID: {num}",
    "The following error was encountered while trying to retrieve the URL: http://{host}/ Connection to {ip} failed. The system returned: (111) Connection refused",
    "The remote host or network may be down. Please try the request again.",
    "Our edge servers could not connect to the origin server {host}.",
    "The load balancer has no healthy backend to route the request to.",
    "No server is available to handle this request.",
    "An error occurred while the gateway was connecting to the backend service.",
    "The upstream server closed the connection before sending a response.",
    "dial tcp {ip}:{port}: connect: connection refused",
    "The origin did not answer. The edge returned this page instead.",
]
PROXY_FOOTERS = ["Apache/2.4.{n} (Ubuntu) Server at {host} Port 443", "Microsoft-IIS/10.0 ARR/3.0", "Varnish cache server", "squid/5.{n}", "HAProxy", "Fastly error", "Caddy", "BIG-IP", "Google Front End",
                 "Azure Front Door", "Envoy", "Traefik", "Kong/3.{n}", "Generated by an edge proxy", "", ""]


def net_proxy_procedural(g: Gen) -> str:
    """A proxy's, load balancer's or CDN's own error page in one of many layouts: the upstream failed, not the app."""
    host, ip, num = g.pick(HOSTS), g.ip(), g.int(10000, 999999999)
    title = g.pick(PROXY_TITLES)
    lines = [g.pick(PROXY_LINES).format(host=host, ip=ip, port=port(g), num=num) for _ in range(g.int(1, 2))]
    foot = g.pick(PROXY_FOOTERS).format(n=g.int(1, 60), host=host)
    k = g.int(0, 3)
    if k == 0:
        return f"<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>{title}</title>\n</head><body>\n<h1>{title}</h1>\n" + "".join(f"<p>{line}</p>\n" for line in lines) + (f"<hr>\n<address>{foot}</address>\n" if foot else "") + "</body></html>"
    if k == 1:
        return f"<html><head><meta charset=\"utf-8\"><title>{title}</title><style>body{{font-family:sans-serif}}</style></head><body><div class=\"error\"><h2>{title}</h2>" + "".join(f"<div>{line}</div>" for line in lines) + f"</div><footer>{foot}</footer></body></html>"
    if k == 2:
        return f"{g.pick(['HTTP/1.1 502 Bad Gateway', 'HTTP/1.1 504 Gateway Timeout', 'HTTP/2 502', '502'])}\n{title}\n" + "\n".join(lines) + (f"\n{foot}" if foot else "")
    return f"{title}. " + " ".join(lines)


def net_cloudflare(g: Gen) -> str:
    code, title, sub = g.pick([
        (502, "Bad gateway", "The web server reported a bad gateway error."),
        (504, "Gateway time-out", "The web server reported a gateway time-out error."),
        (520, "Web server is returning an unknown error", "There is an unknown connection issue between Cloudflare and the origin web server."),
        (521, "Web server is down", "The web server is not returning a connection."),
        (522, "Connection timed out", "The initial connection between Cloudflare's network and the origin web server timed out."),
        (523, "Origin is unreachable", "Cloudflare could not reach the origin web server."),
        (524, "A timeout occurred", "Cloudflare was able to connect to the origin but did not receive a timely HTTP response."),
        (525, "SSL handshake failed", "Cloudflare is unable to establish an SSL connection to the origin server."),
        (530, "Origin DNS error", "Cloudflare is currently unable to resolve your requested domain."),
    ])
    if g.chance(0.25):
        return f"error code: {code}"
    return f'<!DOCTYPE html>\n<html lang="en-US"><head><title>{g.pick(HOSTS)} | {code}: {title}</title><meta charset="UTF-8" /></head><body><div id="cf-error-details"><h1><span class="inline-block">{title}</span><span class="code-label">Error code {code}</span></h1><div class="cf-section">{sub}</div><div class="cf-status"><span>Browser</span> Working <span>Cloudflare</span> Working <span>Host</span> Error</div><span>Cloudflare Ray ID: <strong>{g.hex(16)}</strong></span></div></body></html>'


def net_cloudfront(g: Gen) -> str:
    why = g.pick(["CloudFront wasn't able to connect to the origin.", "CloudFront attempted to establish a connection with the origin, but either the attempt failed or the origin closed the connection.", "The origin's DNS name could not be resolved."])
    return f'<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN"><HTML><HEAD><TITLE>ERROR: The request could not be satisfied</TITLE></HEAD><BODY><H1>502 ERROR</H1><H2>The request could not be satisfied.</H2><HR noshade size="1px">{why}<BR clear="all">Generated by cloudfront (CloudFront)<BR>Request ID: {g.alnum(40)}</BODY></HTML>'


def net_mesh(g: Gen) -> str:
    reason = g.pick(["connection failure", "connection termination", "remote connection failure, transport failure reason: delayed connect error: 111", "overflow", "local reset", "protocol error"])
    return g.pick([
        f"upstream connect error or disconnect/reset before headers. reset reason: {reason}",
        f"upstream connect error or disconnect/reset before headers. retried and the latest reset reason: {reason}",
        "no healthy upstream",
        "upstream reset: reset reason: connection termination",
        dumps(g, {"message": "An invalid response was received from the upstream server"}),
        dumps(g, {"message": "failure to get a peer from the ring-balancer"}),
        dumps(g, {"message": g.pick(["name resolution failed", "The upstream server is currently unavailable"])}),
        dumps(g, {"timestamp": g.iso_ts(), "path": g.pick(PATHS), "status": 503, "error": "Service Unavailable", "message": f"Unable to find instance for {g.pick(['orders-service', 'billing', 'crm-api'])}", "requestId": g.hex(8)}),
        "503 Service Unavailable\nNo server is available to handle this request.",
        "Bad Gateway",
        dumps(g, {"error": {"code": 502, "message": g.pick(["Bad Gateway", "upstream connect error", "backend unreachable"]), "status": "UNAVAILABLE"}}),
        dumps(g, {"errors": [{"status": "502", "title": "Bad Gateway", "detail": "The proxy could not reach the upstream service."}]}),
        f"14 UNAVAILABLE: {g.pick(['No connection established', 'io exception', 'failed to connect to all addresses', 'Connection refused'])}",
    ])


def net_client(g: Gen) -> str:
    host, p, ip = g.pick(HOSTS), port(g), g.ip()
    return g.pick([
        f"connect ECONNREFUSED {ip}:{p}", f"getaddrinfo ENOTFOUND {host}", f"getaddrinfo EAI_AGAIN {host}", "socket hang up", "read ECONNRESET", f"connect EHOSTUNREACH {ip}:{p}", f"connect ENETUNREACH {ip}:{p}",
        f"Error: connect ECONNREFUSED {ip}:{p}\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:{g.int(1400, 1600)}:16)",
        f'Get "https://{host}/v1/orders": dial tcp {ip}:{p}: connect: connection refused', f'Post "http://{host}:{p}/rpc": dial tcp: lookup {host} on 10.96.0.10:53: no such host',
        f"read tcp {g.ip()}:{g.int(30000, 60000)}->{ip}:{p}: read: connection reset by peer", "http: proxy error: dial tcp: connection refused", "EOF",
        f"java.net.ConnectException: Connection refused (Connection refused)\n\tat java.base/sun.nio.ch.Net.connect0(Native Method)", f"java.net.UnknownHostException: {host}: Name or service not known",
        f"java.net.NoRouteToHostException: No route to host", f"javax.net.ssl.SSLHandshakeException: Remote host terminated the handshake", f"org.apache.http.NoHttpResponseException: {host}:{p} failed to respond",
        f"requests.exceptions.ConnectionError: HTTPSConnectionPool(host='{host}', port={p}): Max retries exceeded with url: /v1 (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f{g.hex(6)}>: Failed to establish a new connection: [Errno 111] Connection refused'))",
        f"urllib3.exceptions.NameResolutionError: Failed to resolve '{host}' ([Errno -2] Name or service not known)", f"ConnectionResetError: [Errno 104] Connection reset by peer", "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected",
        f"curl: (7) Failed to connect to {host} port {p}: Connection refused", f"curl: (6) Could not resolve host: {host}", f"curl: (56) Recv failure: Connection reset by peer", f"curl: (35) OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to {host}:{p}",
        f"Faraday::ConnectionFailed: Failed to open TCP connection to {host}:{p} (Connection refused - connect(2))", f"Errno::ECONNREFUSED: Connection refused - connect(2) for \"{host}\" port {p}",
        f"System.Net.Http.HttpRequestException: No connection could be made because the target machine actively refused it. ({host}:{p})", f"System.Net.Sockets.SocketException (11001): No such host is known.",
    ])


def net_envelope(g: Gen) -> str:
    msg = g.pick(["connection refused", "connection reset by peer", "could not resolve host", "DNS lookup failed", "network is unreachable", "upstream connect error", "proxy error", "bad gateway",
                  "failed to connect to upstream", "the connection was closed unexpectedly", "TLS handshake failed", "host unreachable", "backend unreachable", "no route to host", "upstream unavailable"])
    return envelope(g, msg, g.pick([None, 502, 503, "ECONNREFUSED", "ENOTFOUND", "UPSTREAM_ERROR", "BAD_GATEWAY", "NETWORK_ERROR", "CONNECTION_FAILED", -1]), g.pick([502, 503]))


def net_cn(g: Gen) -> str:
    msg = g.pick(["网络连接失败", "无法连接到服务器", "域名解析失败", "连接被拒绝", "网络异常，请检查网络设置", "上游服务连接失败", "网关错误", "代理服务器出错", "与后端的连接被重置", "网络不可达", "服务器无响应，连接已断开", "DNS解析失败"])
    return g.pick([
        dumps(g, {"code": g.pick([502, 503, -1, 10060, 1001]), "msg": msg}),
        dumps(g, {"success": False, "errorCode": g.pick(["NETWORK_ERROR", "BAD_GATEWAY", "CONNECT_FAIL", "DNS_ERROR"]), "errorMsg": msg}),
        dumps(g, {"Code": g.pick(["ServiceUnavailable", "NetworkError", "BadGateway"]), "Message": msg, "RequestId": g.uuid().upper()}),
        msg,
    ])


NET_SUBJ = ["connection", "upstream", "proxy", "gateway", "DNS lookup", "TCP connection", "TLS handshake", "socket", "backend connection", "load balancer", "origin server", "name resolution", "service mesh sidecar"]
NET_PRED = ["refused", "was reset by peer", "failed", "could not be established", "closed unexpectedly", "dropped", "no route to host", "host unreachable", "could not resolve the host", "returned an invalid response", "reset before headers", "is unreachable", "had no healthy upstream"]
NET_SUF = ["", "", "retry later", "502", "check network connectivity", "bad gateway", "ECONNREFUSED"]
NET_SUBJ_ZH = ["连接", "上游服务", "代理", "网关", "DNS", "TCP连接", "TLS握手", "负载均衡", "源站", "域名解析"]
NET_PRED_ZH = ["被拒绝", "被重置", "失败", "无法建立", "意外断开", "不可达", "出错", "超时断开"]
NET_SUF_ZH = ["", "", "请检查网络", "502", "请稍后重试"]


def net_combo(g: Gen) -> str:
    msg = combo(g, NET_SUBJ, NET_PRED, NET_SUF) if g.chance(0.6) else combo(g, NET_SUBJ_ZH, NET_PRED_ZH, NET_SUF_ZH, sep="")
    return envelope(g, msg, g.pick([None, 502, 503, "NETWORK_ERROR", "UPSTREAM_ERROR", -1]), g.pick([502, 503]))


# ------------------------------------------------------------- damaged bodies (data_corrupted)

OK_SOURCES: list = []  # every `ok` template, filled in below once TEMPLATES is complete


def truncated_json(g: Gen) -> str:
    """A JSON body cut short: the data arrived incomplete, whatever it was about."""
    sources = OK_SOURCES
    if g.chance(0.3):
        sources = [auth_combo, rl_combo, nf_combo, se_combo, mf_combo, to_combo, net_envelope, un_combo, auth_stripe, nf_stripe, un_business]
    for _ in range(100):
        body = g.pick(sources)(g).lstrip()
        if len(body) >= 24 and body[:1] in "{[":
            break
    else:
        body = ok_order(g)
    for _ in range(100):
        cut = g.int(max(6, len(body) // 5), max(7, len(body) - 2))
        piece = body[:cut].rstrip()
        if g.chance(0.3):
            piece = piece.rstrip("}] \n\t")
        if json_shape(piece) == "json_cut":
            return piece
    return body[: len(body) // 2] + '"'


def control_chars(g: Gen) -> str:
    """A success body with control characters or replacement characters inside its fields."""
    body = g.pick(OK_SOURCES)(g)
    while len(body) < 2:
        body = g.pick(OK_SOURCES)(g)
    chars = list(body)
    junk = g.pick([["\x00"], ["\x01", "\x02", "\x1b"], ["\ufffd"], ["\x00", "\ufffd"], ["\\u0000"], ["\\u001b", "\\u0007"], ["\x7f", "\x85", "\x9c"]])
    for _ in range(g.int(1, 6)):
        i = g.int(1, len(chars) - 1)
        chars.insert(i, g.pick(junk) * g.int(1, 3))
    return "".join(chars)


# ----------------------------------------------------------------- wrong format (malformed)

def mf_content_type(g: Gen) -> str:
    return g.pick([
        dumps(g, {"error": {"code": 415, "message": g.pick(["Unsupported Media Type", "Content-Type 'text/plain' is not supported", "Expected Content-Type application/json"])}}),
        dumps(g, {"timestamp": g.iso_ts(), "status": 415, "error": "Unsupported Media Type", "message": "Content type 'application/x-www-form-urlencoded;charset=UTF-8' not supported", "path": g.pick(PATHS)}),
        dumps(g, {"detail": g.pick(['Unsupported media type "text/plain" in request.', "JSON parse error: Expecting value: line 1 column 1 (char 0)"])}),
        "SyntaxError: Unexpected token '<', \"<!DOCTYPE \"... is not valid JSON",
        "SyntaxError: Unexpected token < in JSON at position 0",
        f"json: cannot unmarshal string into Go struct field Order.{g.pick(['total', 'items', 'id'])} of type int",
        "invalid character '<' looking for beginning of value",
        "JSON::ParserError: unexpected token at '<html>'",
        "com.fasterxml.jackson.core.JsonParseException: Unexpected character ('<' (code 60)): expected a valid value",
        "ActionDispatch::Http::Parameters::ParseError: 767: unexpected token at 'name=foo'",
        "XML parsing error: not well-formed (invalid token) at line 1, column 0",
        f"<!DOCTYPE html><html><head><title>{g.pick(['Sign in', 'Welcome', 'Index of /'])}</title></head><body>{g.pick(['Please enable JavaScript', 'Loading...', ''])}</body></html>",
    ])


# -------------------------------------------------------------------------------------- unknown

def un_business(g: Gen) -> str:
    code, msg = g.pick([
        ("card_declined", "Your card was declined."),
        ("expired_card", "Your card has expired."),
        ("insufficient_funds", "Your card has insufficient funds."),
        ("incorrect_cvc", "Your card's security code is incorrect."),
        ("amount_too_small", "Amount must be at least 50 cents"),
        ("order_already_cancelled", "This order has already been cancelled."),
        ("conflict", "The resource was modified by another request (version mismatch)."),
        ("out_of_stock", "The requested item is out of stock."),
        ("duplicate", "A customer with this e-mail already exists."),
        ("payment_required", "Upgrade your plan to use this feature."),
        ("invalid_state", "Refunds are not allowed for orders older than 90 days."),
        ("address_unserviceable", "We do not deliver to this postal code."),
        ("limit_reached", "You have reached the maximum number of saved addresses."),
        ("promo_expired", "This promotion has ended."),
        ("method_not_allowed", "DELETE is not supported on this resource."),
    ])
    k = g.r.random()
    if k < 0.35:
        return dumps(g, {"error": {"type": "card_error" if "card" in code or "cvc" in code or "funds" in code else "invalid_request_error", "code": code, "message": msg}})
    if k < 0.6:
        return dumps(g, {"status": g.pick([402, 409, 422, 405, 200]), "error": code, "message": msg})
    if k < 0.8:
        return dumps(g, {"success": False, "code": code.upper(), "message": msg})
    return msg


def un_cn(g: Gen) -> str:
    msg = g.pick(["余额不足", "库存不足", "订单状态不允许此操作", "该商品已售罄", "重复提交，请勿重复操作", "优惠活动已结束", "超出可退款金额", "收货地址不在配送范围内", "银行卡已过期", "当前会员等级不支持该功能", "该手机号已注册", "订单已支付，请勿重复支付", "审批流程进行中，暂不可修改"])
    return g.pick([
        dumps(g, {"code": g.pick([1001, 2002, 3003, 409, 40900]), "msg": msg}),
        dumps(g, {"success": False, "errorCode": g.pick(["BIZ_ERROR", "STOCK_NOT_ENOUGH", "BALANCE_NOT_ENOUGH", "ORDER_STATE_INVALID"]), "errorMsg": msg}),
        msg,
    ])


def un_prose(g: Gen) -> str:
    return g.pick([
        "Hi team, just a reminder that the quarterly review is on Friday. Please bring your slides.",
        "The quick brown fox jumps over the lazy dog.",
        "Meeting notes: discussed roadmap, hiring plan and the offsite in March.",
        "Our new collection is here! Get 20% off everything this weekend only.",
        "Dear customer, thank you for your feedback. We appreciate your business.",
        "It was the best of times, it was the worst of times.",
        "Bonjour, je voudrais réserver une table pour deux personnes ce soir.",
        "Guten Morgen! Wie geht es dir heute?",
        "Ciao, ci vediamo domani alle otto.",
        "今日はいい天気ですね。散歩に行きましょう。",
        "明天上午十点开会，请准时参加。",
        "周末一起去爬山吧，顺便野餐。",
        "本周五下午公司组织团建活动，欢迎大家报名。",
        "Please find attached the slides from yesterday's presentation.",
        "Recipe: mix flour, eggs and milk, then bake for 25 minutes.",
        "Release notes: improved dark mode, faster startup, minor bug fixes.",
        "Happy birthday! Wishing you a wonderful year ahead.",
        "Weather today: partly cloudy with a high of 22 degrees.",
    ])


def un_log(g: Gen) -> str:
    return g.pick([
        f"{g.iso_ts()} INFO  [{g.pick(['main', 'worker-3', 'http-nio-8080-exec-1'])}] {g.pick(['Started application in 4.2 seconds', 'Cache warmed: 1200 entries', 'Scheduled job completed', 'Connected to broker', 'Config reloaded'])}",
        f"{g.iso_ts()} DEBUG processing batch {g.int(1, 999)} of {g.int(1000, 2000)}",
        f"[{g.iso_ts()}] user {g.int(1, 9999)} viewed page {g.pick(PATHS)}",
        f"metric cpu_usage={g.int(1, 99)} mem_usage={g.int(1, 99)} host={g.pick(HOSTS)}",
    ])


def un_other(g: Gen) -> str:
    return g.pick([
        dumps(g, {"warning": "This endpoint is deprecated and will be removed on " + g.date(), "data": None}),
        dumps(g, {"status": "pending_review", "message": "Your request is awaiting manual approval."}),
        dumps(g, {"error": "unsubscribed", "message": "Recipient has opted out of marketing messages."}),
        dumps(g, {"error": "account_suspended_for_fraud_review", "message": "This account is under review by our risk team."}),
        dumps(g, {"message": "I'm a teapot", "status": 418}),
        "Moved Permanently. Redirecting to https://" + g.pick(HOSTS) + "/new",
        dumps(g, {"status": "partial", "message": f"{g.int(1, 9)} of {g.int(10, 20)} items could not be shipped together"}),
    ])


# ------------------------------------------------------------------ compositional phrasings
# subject x predicate (+ suffix), English and Chinese, wrapped in the shared generic envelopes.

def ok_vendor(g: Gen) -> str:
    """Success bodies shaped like common APIs' (lists, pagination, nested objects, escapes, non-ASCII)."""
    k = g.r.random()
    if k < 0.2:
        return dumps(g, {"object": "list", "data": [{"id": f"{g.pick(['pi', 'cus', 'in', 'sub'])}_{g.alnum(14)}", "object": g.pick(["payment_intent", "customer", "invoice"]), "amount": g.int(100, 99999), "currency": g.pick(["usd", "eur"]), "status": g.pick(["succeeded", "paid", "active"])} for _ in range(g.int(1, 3))], "has_more": g.chance(0.5), "url": "/v1/" + g.pick(["customers", "invoices"])})
    if k < 0.35:
        return dumps(g, {"login": g.pick(["octo", "dev-lee", "mariag"]), "id": g.int(1000, 9999999), "type": "User", "site_admin": False, "name": g.pick(["Lee Chen", "María García", "王芳"]), "bio": g.pick(["", "Builder.\nCoffee.", "Dev @ acme"]), "public_repos": g.int(0, 300), "created_at": g.iso_ts()})
    if k < 0.5:
        return dumps(g, {"value": [{"id": f"/subscriptions/{g.uuid()}/resourceGroups/{g.pick(['rg-app', 'rg-data'])}", "name": g.pick(["rg-app", "rg-data"]), "location": g.pick(["westeurope", "eastus"]), "properties": {"provisioningState": "Succeeded"}} for _ in range(g.int(1, 2))]})
    if k < 0.62:
        return dumps(g, {"kind": "storage#object", "name": f"{g.pick(['exports', 'backups'])}/{g.date()}.{g.pick(['csv', 'json', 'parquet'])}", "bucket": g.pick(["acme-data", "prod-exports"]), "size": str(g.int(100, 9999999)), "md5Hash": g.alnum(22) + "==", "crc32c": g.alnum(6) + "==", "updated": g.iso_ts()})
    if k < 0.75:
        return dumps(g, {"count": g.int(0, 500), "next": g.pick([None, f"https://api.example.com/v1/items?page={g.int(2, 9)}"]), "previous": None, "results": [random_object(g, 1) for _ in range(g.int(1, 3))]})
    if k < 0.87:
        return dumps(g, {"data": {g.pick(["orders", "customer", "product"]): {"edges": [{"node": {"id": f"gid://shop/{g.pick(['Order', 'Product'])}/{g.int(1, 9999)}", "name": g.pick(["#1001", "Desk", "椅子"])}}]}}})
    return dumps(g, [{"sku": f"{g.alnum(4).upper()}-{g.pick(['S', 'M', 'L'])}", "stock": g.int(0, 300), "warehouse": g.pick(["AMS-1", "FRA-2", "SHA-3"])} for _ in range(g.int(1, 4))])


def ok_procedural(g: Gen) -> str:
    return random_json(g) if g.chance(0.85) else random_xml(g)


def ok_ack(g: Gen) -> str:
    msg = g.pick(["Order created", "Updated successfully", "Request accepted", "Saved", "Done", "操作成功", "保存成功", "提交成功", "Payment captured", "Invoice sent", "Subscription renewed"])
    return dumps(g, g.pick([{"status": "success", "message": msg}, {"success": True, "msg": msg, "id": g.int(1, 99999)}, {"ok": True, "message": msg}, {"code": 0, "msg": msg}, {"result": "ok", "detail": msg}]))


AUTH_SUBJ = ["token", "access token", "API key", "api_key", "session", "credentials", "JWT", "bearer token", "refresh token", "client secret", "signature", "auth token", "login session", "OAuth token", "security token", "password", "app key", "authorization"]
AUTH_PRED = ["expired", "has expired", "is expired", "is invalid", "invalid", "was revoked", "is missing", "not recognized", "does not match", "is no longer valid", "rejected", "could not be verified", "not provided", "has been disabled", "is not authorized for this operation", "lacks the required scope"]
AUTH_SUF = ["", "", "please log in again", "re-authenticate and retry", "check your key", "sign in to continue", "access denied", "unauthorized", "401", "obtain a new token"]
AUTH_SUBJ_ZH = ["token", "令牌", "访问令牌", "会话", "登录状态", "登录", "签名", "密钥", "AccessKey", "凭证", "身份认证", "授权", "access_token", "用户凭据", "登录信息"]
AUTH_PRED_ZH = ["已过期", "过期", "已失效", "失效", "无效", "不合法", "校验失败", "验证失败", "缺失", "错误", "已被吊销", "不存在或已过期"]
AUTH_SUF_ZH = ["", "", "请重新登录", "请重新获取", "请检查后重试", "无权访问", "请先登录", "请重新授权"]


def auth_combo(g: Gen) -> str:
    msg = combo(g, AUTH_SUBJ, AUTH_PRED, AUTH_SUF) if g.chance(0.55) else combo(g, AUTH_SUBJ_ZH, AUTH_PRED_ZH, AUTH_SUF_ZH, sep="")
    return envelope(g, msg, g.pick([None, 401, 403, "UNAUTHORIZED", "AUTH_FAILED", "TOKEN_EXPIRED", "InvalidToken", 40101, 200]), g.pick([401, 403, 200]))


RL_SUBJ = ["rate limit", "request quota", "API quota", "call limit", "request rate", "usage limit", "per-minute limit", "daily quota", "concurrency limit", "throughput limit", "request frequency"]
RL_PRED = ["exceeded", "reached", "hit", "exhausted", "has been exceeded", "was exceeded for this key", "exceeded for this IP"]
RL_SUF = ["", "", "retry later", "please slow down", "try again in a minute", "too many requests", "back off and retry", "429", "requests are being throttled"]
RL_SUBJ_ZH = ["请求", "调用", "访问", "接口调用", "API调用", "请求频率", "调用次数", "访问次数", "并发数", "每日配额"]
RL_PRED_ZH = ["过于频繁", "太频繁", "超过限制", "已达上限", "超限", "超出配额", "被限流", "触发流控"]
RL_SUF_ZH = ["", "", "请稍后再试", "请稍后重试", "请降低请求频率", "请明天再试"]


def rl_combo(g: Gen) -> str:
    msg = combo(g, RL_SUBJ, RL_PRED, RL_SUF) if g.chance(0.55) else combo(g, RL_SUBJ_ZH, RL_PRED_ZH, RL_SUF_ZH, sep="")
    return envelope(g, msg, g.pick([None, 429, "RATE_LIMITED", "THROTTLED", "TooManyRequests", 42900]), 429)


NF_PRED = ["not found", "does not exist", "could not be found", "was not found", "is unknown", "has been deleted", "no longer exists", "cannot be located", "is missing"]
NF_SUF = ["", "", "check the id", "404", "it may have been removed", "verify the resource path"]
NF_PRED_ZH = ["不存在", "未找到", "找不到", "已被删除", "不存在或已删除", "查询不到", "无此记录"]
NF_SUF_ZH = ["", "", "请检查ID", "请确认后重试", "404"]


def nf_combo(g: Gen) -> str:
    if g.chance(0.55):
        res = g.pick(RESOURCES)
        subj = [f"{res}", f"The {res}", f"{res} {g.pick(['O-', 'id ', '#'])}{g.digits(g.int(3, 8))}", f"No such {res}", f"Requested {res}"]
        msg = combo(g, subj, NF_PRED, NF_SUF)
    else:
        subj = [g.pick(CN_RES), f"该{g.pick(CN_RES)}", f"{g.pick(CN_RES)}ID", f"指定的{g.pick(CN_RES)}", "页面", "请求的资源"]
        msg = combo(g, subj, NF_PRED_ZH, NF_SUF_ZH, sep="")
    return envelope(g, msg, g.pick([None, 404, "NOT_FOUND", "ResourceNotFound", 40400]), 404)


SE_SUBJ = ["internal server error", "internal error", "unexpected server error", "service unavailable", "backend failure", "unhandled exception", "server fault", "database unavailable", "service crashed", "fatal error", "application error", "system failure"]
SE_PRED = ["occurred", "while processing the request", "please try again later", "on our side", "in the payment backend", "the team has been notified", "(500)", "(503)", "in service orders-api"]
SE_SUBJ_ZH = ["服务器内部错误", "系统异常", "服务不可用", "后端服务故障", "系统繁忙", "服务崩溃", "内部服务调用失败", "程序异常", "数据库不可用"]
SE_SUF_ZH = ["请稍后再试", "请联系管理员", "工程师正在处理", "(500)", "(503)", ""]


def se_combo(g: Gen) -> str:
    msg = combo(g, SE_SUBJ, SE_PRED) if g.chance(0.55) else combo(g, SE_SUBJ_ZH, SE_SUF_ZH, sep="，")
    return envelope(g, msg, g.pick([None, 500, 503, "INTERNAL_ERROR", "SYSTEM_ERROR", "ServiceUnavailable", 50000, -1]), g.pick([500, 503]))


MF_SUBJ = ["request body", "JSON payload", "response body", "parameter", "field", "input", "query string", "content", "header value", "request", "XML document", "date value"]
MF_PRED = ["is malformed", "could not be parsed", "is not valid JSON", "has an invalid format", "failed validation", "is missing a required field", "has the wrong type", "contains a syntax error", "is invalid", "is empty", "is out of range", "must be a number", "must not be null"]
MF_SUF = ["", "", "400", "bad request", "check the documentation", "expected an object", "unexpected token at position " + "12"]
MF_SUBJ_ZH = ["请求参数", "请求体", "JSON", "参数", "字段", "返回数据", "输入", "日期", "手机号", "金额"]
MF_PRED_ZH = ["格式错误", "格式不正确", "解析失败", "不合法", "非法", "缺失", "不能为空", "类型错误", "校验不通过", "超出范围"]
MF_SUF_ZH = ["", "", "请检查后重试", "400", "请参考接口文档"]


def mf_combo(g: Gen) -> str:
    msg = combo(g, MF_SUBJ, MF_PRED, MF_SUF) if g.chance(0.55) else combo(g, MF_SUBJ_ZH, MF_PRED_ZH, MF_SUF_ZH, sep="")
    return envelope(g, msg, g.pick([None, 400, 422, "BAD_REQUEST", "INVALID_PARAMETER", "VALIDATION_ERROR", "InvalidParameter", 40000]), g.pick([400, 422]))


DC_SUBJ = ["checksum", "CRC", "MD5 digest", "SHA-256 hash", "data", "file", "record", "archive", "block", "page", "payload", "backup", "stored object", "index file", "encoding"]
DC_PRED = ["mismatch", "does not match", "is corrupted", "is corrupt", "verification failed", "is damaged", "integrity check failed", "is inconsistent", "was truncated on disk", "failed validation after transfer", "contains invalid bytes"]
DC_SUF = ["", "", "data may be damaged", "re-upload the file", "repair required", "restore from backup", f"expected {'a' * 0}0x1f2e3d4c"]
DC_SUBJ_ZH = ["数据", "文件", "校验和", "MD5", "CRC", "记录", "存储", "压缩包", "备份", "报文", "索引", "字符编码"]
DC_PRED_ZH = ["已损坏", "损坏", "校验失败", "不匹配", "不一致", "被篡改", "完整性校验失败", "出现乱码", "无法还原"]
DC_SUF_ZH = ["", "", "请重新上传", "请从备份恢复", "请联系管理员修复"]


def dc_combo(g: Gen) -> str:
    msg = combo(g, DC_SUBJ, DC_PRED, DC_SUF) if g.chance(0.55) else combo(g, DC_SUBJ_ZH, DC_PRED_ZH, DC_SUF_ZH, sep="")
    return envelope(g, msg, g.pick([None, 500, 422, "DATA_CORRUPTED", "CHECKSUM_MISMATCH", "IntegrityError", 50010]))


TO_SUBJ = ["request", "read", "query", "operation", "socket read", "RPC", "call to inventory service", "database query", "handshake", "backend call", "job"]
TO_PRED = ["timed out", "timeout", "took too long and was aborted", "exceeded the deadline", "did not respond in time", "timed out after 30s", "timed out after 5000 ms", "exceeded time limit", "expired before completion"]
TO_SUF = ["", "", "retry later", "408", "try again", "deadline exceeded"]
TO_SUBJ_ZH = ["请求", "读取", "查询", "接口", "数据库", "调用", "任务", "处理"]
TO_PRED_ZH = ["超时", "响应超时", "执行超时", "等待超时", "超时未响应", "超过时限", "处理超时"]
TO_SUF_ZH = ["", "", "请稍后重试", "408", "请重试"]


def to_combo(g: Gen) -> str:
    msg = combo(g, TO_SUBJ, TO_PRED, TO_SUF) if g.chance(0.55) else combo(g, TO_SUBJ_ZH, TO_PRED_ZH, TO_SUF_ZH, sep="")
    return envelope(g, msg, g.pick([None, 504, 408, "TIMEOUT", "GATEWAY_TIMEOUT", "DeadlineExceeded", 50400]), g.pick([504, 408]))


UN_SUBJ = ["card", "payment", "coupon", "promo code", "voucher", "order", "shipping address", "account", "subscription", "item", "gift card", "transfer", "booking", "trial", "offer", "discount"]
UN_PRED = ["declined", "was declined by the bank", "has expired", "expired", "is already cancelled", "is out of stock", "is not eligible", "limit reached", "already exists", "already used", "cannot be modified after shipping", "is not available in your region", "requires manual review", "exceeds the refundable amount", "is on hold", "was already submitted"]
UN_SUF = ["", "", "use a different card", "contact support", "no action taken", "see your dashboard"]
UN_SUBJ_ZH = ["银行卡", "优惠券", "订单", "商品", "账户余额", "收货地址", "会员", "活动", "库存", "代金券", "礼品卡", "退款申请"]
UN_PRED_ZH = ["已过期", "不足", "已取消", "已售罄", "不可用", "已使用", "不支持修改", "审核中", "已达上限", "不在配送范围", "重复提交"]
UN_SUF_ZH = ["", "", "请更换后重试", "请联系客服", "无法继续操作"]


def un_combo(g: Gen) -> str:
    msg = combo(g, UN_SUBJ, UN_PRED, UN_SUF) if g.chance(0.55) else combo(g, UN_SUBJ_ZH, UN_PRED_ZH, UN_SUF_ZH, sep="")
    return envelope(g, msg, g.pick([None, 402, 409, 422, "BUSINESS_ERROR", "CARD_DECLINED", "CONFLICT", 3001, 200]))


def un_prose_proc(g: Gen) -> str:
    return random_prose(g)


TEMPLATES = {
    "ok": [ok_order, ok_customer, ok_list, ok_envelope, ok_envelope, ok_health, ok_cn, ok_cn, ok_misc, ok_misc, ok_procedural, ok_procedural, ok_procedural, ok_procedural, ok_ack, ok_vendor, ok_vendor, ok_vendor, ok_vendor, ok_order, ok_order, ok_customer, ok_customer, ok_list],
    "auth_failed": [auth_stripe, auth_github, auth_aws, auth_google, auth_oauth, auth_generic, auth_generic, auth_generic, auth_cn, auth_cn, auth_cn, auth_aliyun, auth_wechat, auth_html, auth_combo, auth_combo, auth_combo, auth_combo, auth_combo],
    "rate_limited": [rl_stripe, rl_github, rl_aws, rl_google, rl_generic, rl_generic, rl_generic, rl_cn, rl_cn, rl_html, rl_combo, rl_combo, rl_combo, rl_combo],
    "not_found": [nf_frameworks, nf_frameworks, nf_stripe, nf_github, nf_aws, nf_google, nf_generic, nf_generic, nf_generic, nf_cn, nf_cn, nf_html, nf_combo, nf_combo, nf_combo, nf_combo],
    "server_error": [se_frameworks, se_frameworks, se_frameworks, se_trace, se_trace, se_spring, se_nginx, se_nginx, se_cloudflare, se_generic, se_generic, se_generic, se_cn, se_cn, se_combo, se_combo, se_combo, se_combo],
    "malformed": [mf_parse, mf_parse, mf_validation, mf_validation, mf_validation, mf_cn, mf_cn, mf_html_instead_of_json, mf_content_type, mf_content_type, mf_combo, mf_combo, mf_combo, mf_combo],
    "data_corrupted": [dc_encoding, dc_encoding, dc_integrity, dc_integrity, dc_integrity, dc_aws, dc_cn, dc_cn, dc_garbage, control_chars, control_chars, dc_combo, dc_combo, dc_combo, dc_combo, truncated_json, truncated_json, truncated_json],
    "timeout": [to_generic, to_generic, to_generic, to_trace, to_trace, to_aws, to_html, to_cn, to_cn, to_combo, to_combo, to_combo, to_combo],
    "network_issue": [net_proxy_page, net_proxy_page, net_proxy_procedural, net_proxy_procedural, net_proxy_procedural, net_cloudflare, net_cloudflare, net_cloudfront, net_mesh, net_mesh, net_mesh, net_client, net_client, net_client, net_client, net_envelope, net_envelope, net_cn, net_cn, net_combo, net_combo, net_combo],
    "unknown": [un_business, un_business, un_business, un_cn, un_cn, un_prose, un_prose, un_log, un_other, un_combo, un_combo, un_combo, un_combo, un_prose_proc, un_prose_proc, un_prose_proc],
}


# Issue 15, third revision: real APIs' plain resource bodies for `ok` (vendor_bodies.py), and GraphQL
# error envelopes, RFC 7807 problem documents and other languages' messages for every other label.
TEMPLATES["ok"] = TEMPLATES["ok"] + OK_REAL * 2
# Damage is independent of content: cut and control-character bodies are made from the same mix of
# success bodies as `ok` (when they came from a few templates, a plain customer record looked damaged).
OK_SOURCES[:] = TEMPLATES["ok"]
for _label in LABELS[1:]:
    TEMPLATES[_label] = TEMPLATES[_label] + for_label(_label) * max(1, len(TEMPLATES[_label]) // 12)
# Issue 15, fourth revision (damage.py): damage made by the process that makes it, over the whole `ok`
# mix; what says nothing classifiable is `unknown`; SOAP faults and XML error documents for every label.
TEMPLATES["data_corrupted"] = TEMPLATES["data_corrupted"] + damage_templates(OK_SOURCES)
TEMPLATES["unknown"] = TEMPLATES["unknown"] + UNKNOWN_TEMPLATES
TEMPLATES["malformed"] = TEMPLATES["malformed"] + [framework_validation, framework_validation]
for _label in LABELS[1:]:
    TEMPLATES[_label] = TEMPLATES[_label] + xml_templates(_label)


def generate(seed: int = DEFAULT_SEED, per_label: int = PER_LABEL) -> list[Example]:
    """The training examples, in a deterministic order."""
    return generate_examples(TEMPLATES, LABELS, seed, per_label)


if __name__ == "__main__":
    generator_main(__doc__, DEFAULT_SEED, generate, Path(__file__).with_name("train.jsonl"))
