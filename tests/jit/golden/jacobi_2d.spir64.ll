; ModuleID = 'jacobi_2d'
source_filename = "jacobi_2d"
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64"
target triple = "spir64-unknown-unknown"

; Function Attrs: nounwind
define spir_kernel void @jacobi_2d(double addrspace(1)* %v, i64 %v.extent0, i64 %v.extent1, i64 %v.first, double addrspace(1)* %u, i64 %u.extent0, i64 %u.extent1, i64 %u.first, i64 %begin0, i64 %end0, i64 %begin1, i64 %end1) #0 !kernel_arg_addr_space !1 !kernel_arg_access_qual !2 !kernel_arg_type !3 !kernel_arg_base_type !3 !kernel_arg_type_qual !4 !kernel_arg_name !5 {
entry:
  %0 = call spir_func i64 @_Z13get_global_idj(i32 1) #1
  %i0 = add nsw i64 %begin0, %0
  %1 = icmp slt i64 %i0, %end0
  %2 = call spir_func i64 @_Z13get_global_idj(i32 0) #1
  %i1 = add nsw i64 %begin1, %2
  %3 = icmp slt i64 %i1, %end1
  %4 = and i1 %1, %3
  br i1 %4, label %point, label %done

point:                                            ; preds = %entry
  %5 = icmp sgt i64 %i0, 0
  %6 = sub i64 %u.extent0, 1
  %7 = icmp slt i64 %i0, %6
  %8 = and i1 %5, %7
  %9 = icmp sgt i64 %i1, 0
  %10 = and i1 %8, %9
  %11 = sub i64 %u.extent1, 1
  %12 = icmp slt i64 %i1, %11
  %13 = and i1 %10, %12
  br i1 %13, label %then, label %else

else:                                             ; preds = %point
  %14 = mul i64 %i0, %u.extent1
  %15 = add i64 %14, %i1
  %16 = sub i64 %15, %u.first
  %17 = getelementptr inbounds double, double addrspace(1)* %u, i64 %16
  %18 = load double, double addrspace(1)* %17, align 8
  %19 = mul i64 %i0, %v.extent1
  %20 = add i64 %19, %i1
  %21 = sub i64 %20, %v.first
  %22 = getelementptr inbounds double, double addrspace(1)* %v, i64 %21
  store double %18, double addrspace(1)* %22, align 8
  br label %endif

then:                                             ; preds = %point
  %23 = sub i64 %i0, 1
  %24 = mul i64 %23, %u.extent1
  %25 = add i64 %24, %i1
  %26 = sub i64 %25, %u.first
  %27 = getelementptr inbounds double, double addrspace(1)* %u, i64 %26
  %28 = load double, double addrspace(1)* %27, align 8
  %29 = add i64 %i0, 1
  %30 = mul i64 %29, %u.extent1
  %31 = add i64 %30, %i1
  %32 = sub i64 %31, %u.first
  %33 = getelementptr inbounds double, double addrspace(1)* %u, i64 %32
  %34 = load double, double addrspace(1)* %33, align 8
  %35 = fadd double %28, %34
  %36 = sub i64 %i1, 1
  %37 = mul i64 %i0, %u.extent1
  %38 = add i64 %37, %36
  %39 = sub i64 %38, %u.first
  %40 = getelementptr inbounds double, double addrspace(1)* %u, i64 %39
  %41 = load double, double addrspace(1)* %40, align 8
  %42 = fadd double %35, %41
  %43 = add i64 %i1, 1
  %44 = mul i64 %i0, %u.extent1
  %45 = add i64 %44, %43
  %46 = sub i64 %45, %u.first
  %47 = getelementptr inbounds double, double addrspace(1)* %u, i64 %46
  %48 = load double, double addrspace(1)* %47, align 8
  %49 = fadd double %42, %48
  %50 = fmul double %49, 2.500000e-01
  %51 = mul i64 %i0, %v.extent1
  %52 = add i64 %51, %i1
  %53 = sub i64 %52, %v.first
  %54 = getelementptr inbounds double, double addrspace(1)* %v, i64 %53
  store double %50, double addrspace(1)* %54, align 8
  br label %endif

endif:                                            ; preds = %else, %then
  br label %done

done:                                             ; preds = %endif, %entry
  ret void
}

; Function Attrs: nounwind readnone willreturn
declare spir_func i64 @_Z13get_global_idj(i32) #1

attributes #0 = { nounwind }
attributes #1 = { nounwind readnone willreturn }

!opencl.ocl.version = !{!0}
!opencl.spir.version = !{!0}

!0 = !{i32 1, i32 2}
!1 = !{i32 1, i32 0, i32 0, i32 0, i32 1, i32 0, i32 0, i32 0, i32 0, i32 0, i32 0, i32 0}
!2 = !{!"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none"}
!3 = !{!"double*", !"long", !"long", !"long", !"double*", !"long", !"long", !"long", !"long", !"long", !"long", !"long"}
!4 = !{!"", !"", !"", !"", !"const", !"", !"", !"", !"", !"", !"", !""}
!5 = !{!"v", !"v_n0", !"v_n1", !"v_first", !"u", !"u_n0", !"u_n1", !"u_first", !"begin0", !"end0", !"begin1", !"end1"}
