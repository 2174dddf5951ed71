# Turns one text file into a C file holding it as a string and its length (api/openapi.yaml, served
# at GET /api/v1/openapi.yaml). Run as: cmake -DOUT=file.c -DIN=file -DNAME=symbol -P embed_text.cmake
file(READ ${IN} text)
string(LENGTH "${text}" len)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
set(body "/* Generated from ${IN} by controller/embed_text.cmake; do not edit. */\n")
string(APPEND body "#include <stddef.h>\nconst char ${NAME}[] =\n    \"${text}\";\n")
string(APPEND body "const size_t ${NAME}_len = ${len};\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
