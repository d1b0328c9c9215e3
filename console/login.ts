/** The page a browser gets with a 401: a form for the console key (kept in an HttpOnly cookie once accepted). */
import { esc } from '../replay/render-html.ts';

/** The login page; `problem` is shown above the form (a refused key). */
export function loginPage(problem: string | null): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>tao console: key needed</title>
<style>body{font-family:system-ui,sans-serif;background:#f6f7f9;margin:0;display:flex;justify-content:center;padding-top:12vh}form{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:24px 28px;width:420px}h1{font-size:18px;margin:0 0 8px}p{color:#444;font-size:14px}input{width:100%;box-sizing:border-box;font:13px ui-monospace,monospace;padding:8px;margin:8px 0 12px}button{padding:8px 16px}.problem{color:#b3261e}</style></head>
<body><form method="post" action="/login"><h1>tao console</h1>
<p>401: this console is bound to a non-loopback address and needs an API key with the <code>console</code> scope (<code>tao ingress key --scopes console</code>).</p>
${problem ? `<p class="problem">${esc(problem)}</p>` : ''}
<input name="key" type="password" autocomplete="off" placeholder="tao_…" aria-label="API key"><button type="submit">Open the console</button></form></body></html>
`;
}
