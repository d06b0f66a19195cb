# canopy_module(NAME [PUBLIC deps...] [PRIVATE deps...]): one library per
# top-level folder. Sources are every .cpp below the folder; headers install
# to include/canopy/<folder>/ so that users write <canopy/<folder>/x.hpp>;
# headers under an `internal/` folder are the module's own and do not install.
function(canopy_module name)
  cmake_parse_arguments(ARG "" "" "PUBLIC;PRIVATE;EXCLUDE" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*.cpp")
  foreach(pattern IN LISTS ARG_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "${pattern}")
  endforeach()
  add_library(canopy_${name} ${sources})
  add_library(Canopy::canopy_${name} ALIAS canopy_${name})
  target_include_directories(canopy_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(canopy_${name} PUBLIC ${ARG_PUBLIC} PRIVATE ${ARG_PRIVATE})
  # Calls inside the library bind to its own functions when it is linked, not
  # through symbol lookups by the dynamic loader at every start.
  if(BUILD_SHARED_LIBS)
    target_link_options(canopy_${name} PRIVATE -Wl,-Bsymbolic-functions)
  endif()
  set_target_properties(canopy_${name} PROPERTIES OUTPUT_NAME canopy_${name} VERSION ${PROJECT_VERSION}
                                                  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  install(TARGETS canopy_${name} EXPORT CanopyTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/canopy/${name}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "internal" EXCLUDE)
endfunction()
