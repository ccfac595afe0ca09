# CPU image of the atomicrag library: the offline models, the CPU vLLM server (SmolLM2) and an
# HTTP server over an index. Build and try it:
#   docker build -t atomicrag .
#   export ATOMICRAG_API_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
#   docker run --rm -e ATOMICRAG_API_KEY -p 127.0.0.1:8765:8765 atomicrag   # serves the quickstart index below
#   curl -s localhost:8765/query -H "Authorization: Bearer $ATOMICRAG_API_KEY" \
#     -H 'Content-Type: application/json' -d '{"question": "Where was Marie Curie born?"}'
# (in a container the server listens on 0.0.0.0, and a server beyond loopback needs a token)
# Serve your own documents: mount them and index at start, e.g.
#   docker run --rm -e ATOMICRAG_API_KEY -p 127.0.0.1:8765:8765 -v "$PWD/my_docs:/docs" atomicrag \
#     sh -c 'atomicrag -q index /docs --out /data/my_index && atomicrag serve --index /data/my_index --host 0.0.0.0'
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ATOMICRAG_VLLM_VENV=/opt/atomicrag/venv-vllm \
    ATOMICRAG_STATE_DIR=/data/state \
    ATOMICRAG_HF_CACHE=/opt/atomicrag/hf

COPY . /src
# the library with the CPU torch (PyTorch's CPU index: no CUDA wheels), then the vLLM server
# environment and the SmolLM2 model the default reader needs
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu "/src[cpu]" \
 && atomicrag setup \
 && atomicrag setup --check

# the quickstart: two documents indexed with the default models, a retrieval query, an answer
WORKDIR /data
RUN mkdir -p quickstart \
 && printf 'Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891.\n' > quickstart/marie.txt \
 && printf 'Warsaw is the capital of Poland.\n' > quickstart/warsaw.txt \
 && atomicrag -q index quickstart --out quickstart_index \
 && atomicrag -q query "Where was Marie Curie born?" --index quickstart_index --no-answer \
 && atomicrag -q query "Where was Marie Curie born?" --index quickstart_index

EXPOSE 8765
CMD ["atomicrag", "serve", "--index", "/data/quickstart_index", "--host", "0.0.0.0", "--port", "8765"]
