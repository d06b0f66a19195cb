; ModuleID = 'triad'
source_filename = "triad"
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64"
target triple = "spir64-unknown-unknown"

; Function Attrs: nounwind
define spir_kernel void @triad(double addrspace(1)* %a, i64 %a.extent0, i64 %a.first, double addrspace(1)* %b, i64 %b.extent0, i64 %b.first, double addrspace(1)* %c, i64 %c.extent0, i64 %c.first, double %s, i64 %begin0, i64 %end0) #0 !kernel_arg_addr_space !1 !kernel_arg_access_qual !2 !kernel_arg_type !3 !kernel_arg_base_type !3 !kernel_arg_type_qual !4 !kernel_arg_name !5 {
entry:
  %0 = call spir_func i64 @_Z13get_global_idj(i32 0) #1
  %i0 = add nsw i64 %begin0, %0
  %1 = icmp slt i64 %i0, %end0
  br i1 %1, label %point, label %done

point:                                            ; preds = %entry
  %2 = sub i64 %i0, %b.first
  %3 = getelementptr inbounds double, double addrspace(1)* %b, i64 %2
  %4 = load double, double addrspace(1)* %3, align 8
  %5 = sub i64 %i0, %c.first
  %6 = getelementptr inbounds double, double addrspace(1)* %c, i64 %5
  %7 = load double, double addrspace(1)* %6, align 8
  %8 = fmul double %s, %7
  %9 = fadd double %4, %8
  %10 = sub i64 %i0, %a.first
  %11 = getelementptr inbounds double, double addrspace(1)* %a, i64 %10
  store double %9, double addrspace(1)* %11, align 8
  br label %done

done:                                             ; preds = %point, %entry
  ret void
}

; Function Attrs: nounwind readnone willreturn
declare spir_func i64 @_Z13get_global_idj(i32) #1

attributes #0 = { nounwind }
attributes #1 = { nounwind readnone willreturn }

!opencl.ocl.version = !{!0}
!opencl.spir.version = !{!0}

!0 = !{i32 1, i32 2}
!1 = !{i32 1, i32 0, i32 0, i32 1, i32 0, i32 0, i32 1, i32 0, i32 0, i32 0, i32 0, i32 0}
!2 = !{!"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none"}
!3 = !{!"double*", !"long", !"long", !"double*", !"long", !"long", !"double*", !"long", !"long", !"double", !"long", !"long"}
!4 = !{!"", !"", !"", !"const", !"", !"", !"const", !"", !"", !"", !"", !""}
!5 = !{!"a", !"a_n0", !"a_first", !"b", !"b_n0", !"b_first", !"c", !"c_n0", !"c_first", !"s", !"begin0", !"end0"}
