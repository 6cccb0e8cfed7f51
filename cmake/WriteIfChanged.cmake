# flowscope_write_if_changed(<path> <text>): writes text to path only when it differs from what is there, so
# an unchanged generated source does not rebuild what compiles it. Included by the script-mode generators
# (EmbedShaders.cmake, EmbedSpirv.cmake).
function(flowscope_write_if_changed path text)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${text}")
endfunction()
