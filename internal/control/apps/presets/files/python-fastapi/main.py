import os

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

# hutch serves the dev sandbox under /dev/ (HUTCH_APP_BASE) and strips that
# prefix before a request arrives; root_path puts it back in the links
# FastAPI writes, such as /docs's openapi.json.
app = FastAPI(root_path=os.environ.get("HUTCH_APP_BASE", "/").rstrip("/"))

PAGE = """<!doctype html>
<html lang="en">
  <head><meta charset="utf-8"><title>hutch app</title></head>
  <body>
    <h1 id="title">Hello from hutch</h1>
    <p>Edit <code>main.py</code> and save: the server reloads.</p>
    <p>Health: <a href="api/health">api/health</a>, API docs: <a href="docs">docs</a></p>
  </body>
</html>
"""


@app.get("/", response_class=HTMLResponse)
def index() -> str:
    return PAGE


@app.get("/api/health")
def health() -> dict:
    return {"ok": True, "role": os.environ.get("HUTCH_APP_ROLE", "dev")}
