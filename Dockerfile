# The grpo-lab browser lab, served on 0.0.0.0 as a non-root user by `python -m grpo_lab.server` (panel serve
# with the lab's Content-Security-Policy and a /health endpoint that builds no session).
#   docker build -t grpo-lab .
#   docker run -p 5006:5006 -e BOKEH_ALLOW_WS_ORIGIN=lab.example.org grpo-lab
# BOKEH_ALLOW_WS_ORIGIN (comma-separated host[:port]) lists the origins whose pages may open the
# lab's websocket: set it to the host name visitors use. PORT changes the port. The Replay tab lists the
# repository's shipped runs (GRPO_LAB_RUNS; mount another folder there to replay your own).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PORT=5006 \
    BOKEH_ALLOW_WS_ORIGIN=localhost:5006,127.0.0.1:5006 \
    GRPO_LAB_RUNS=/home/lab/grpo-lab/runs

RUN useradd --create-home --uid 10001 lab
WORKDIR /home/lab/grpo-lab
COPY pyproject.toml setup.py README.md ./
COPY sims ./sims
COPY train ./train
COPY trl_recorder ./trl_recorder
COPY lab ./lab
COPY runs ./runs
RUN pip install --no-cache-dir . && chown -R 10001:10001 /home/lab

USER 10001:10001
EXPOSE 5006
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["sh", "-c", "python -c \"import urllib.request; urllib.request.urlopen('http://127.0.0.1:'+__import__('os').environ['PORT']+'/health', timeout=4)\""]
CMD ["sh", "-c", "exec python -m grpo_lab.server lab/app.py --address 0.0.0.0 --port \"$PORT\" --num-procs 2 --reuse-sessions --index app"]
