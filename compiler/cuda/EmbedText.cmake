# cmake -DINPUT=FILE -DOUTPUT=FILE.inc -P EmbedText.cmake
#
# Writes FILE's text as one C++ raw string literal, for #include into a
# source that needs the file verbatim at run time (CudaPrelude.cpp embeds
# core/ScalarOps.h in the NVRTC prelude this way: generated at build
# time from the one file, never a hand copy).
file(READ "${INPUT}" text)
string(FIND "${text}" ")snug_embedded\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter")
endif()
file(WRITE "${OUTPUT}.tmp" "R\"snug_embedded(${text})snug_embedded\"\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
